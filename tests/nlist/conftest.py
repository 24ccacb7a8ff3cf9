"""Fixtures for the neighbour-list tests: the shared DeePMD data sets and small synthetic systems."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"

# name -> (system folder relative to DATA, sel); the first two frames of each are used.
DATASETS = {
    "water": ("water/data_0", [46, 92]),
    "copper": ("copper/C11_C12_I_strain_+0.010", [96]),
    "alloy": ("alloy/train/sys.000", [80, 80, 80]),
}


def load_frames(folder: Path, nframes: int = 2) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """coord (nf, nloc, 3), atype (nf, nloc), box (nf, 3, 3) of a DeePMD system, float64."""
    coord = np.load(folder / "set.000" / "coord.npy")[:nframes].astype(np.float64)
    box = np.load(folder / "set.000" / "box.npy")[:nframes].astype(np.float64)
    atype = np.loadtxt(folder / "type.raw", dtype=np.int64).reshape(-1)
    nf = coord.shape[0]
    return (torch.tensor(coord).reshape(nf, -1, 3), torch.tensor(atype).expand(nf, -1).clone(),
            torch.tensor(box).reshape(nf, 3, 3))


def random_system(box_rows, natoms: int, ntypes: int, seed: int, nf: int = 1):
    """Random atoms in a (possibly skewed) cell, some outside it to exercise wrapping: coord, atype, box."""
    gen = torch.Generator().manual_seed(seed)
    box = torch.tensor(box_rows, dtype=torch.float64).expand(nf, 3, 3).clone()
    frac = torch.rand(nf, natoms, 3, generator=gen, dtype=torch.float64) * 1.6 - 0.3
    atype = torch.randint(0, ntypes, (nf, natoms), generator=gen)
    return frac @ box, atype, box


SKEWED = [[5.0, 0.0, 0.0], [4.0, 5.0, 0.0], [3.0, -4.0, 5.0]]
TINY = [[2.5, 0.0, 0.0], [0.0, 2.5, 0.0], [0.0, 0.0, 2.5]]


def make_system(name: str):
    """(coord, atype, box | None, sel) of a named test system; skips when shared data is absent.

    skewed: 20 atoms, 2 types, strongly skewed triclinic cell (face distances < rcut).
    tiny: 2 atoms, 2 types, 2.5 A cubic cell (many image layers).
    cluster: 60 atoms, 2 types, non-periodic, in a 12 A cube.
    """
    if name in DATASETS:
        folder, sel = DATASETS[name]
        if not (DATA / folder).is_dir():
            pytest.skip(f"shared data not found at {DATA / folder}")
        return (*load_frames(DATA / folder), sel)
    if name == "skewed":
        return (*random_system(SKEWED, 20, 2, seed=1, nf=2), [120, 120])
    if name == "tiny":
        return (*random_system(TINY, 2, 2, seed=2), [150, 150])
    if name == "cluster":
        gen = torch.Generator().manual_seed(3)
        coord = torch.rand(1, 60, 3, generator=gen, dtype=torch.float64) * 12.0
        return coord, torch.randint(0, 2, (1, 60), generator=gen), None, [60, 60]
    raise KeyError(name)


SYSTEMS = [*DATASETS, "skewed", "tiny", "cluster"]


@pytest.fixture(params=SYSTEMS)
def system(request):
    """Every test system in turn: (coord, atype, box | None, sel)."""
    return make_system(request.param)


@pytest.fixture
def system_factory():
    """make_system, for tests that need a named system inside the test (test modules do not import conftest)."""
    return make_system


@pytest.fixture
def random_box_system():
    """random_system(box_rows, natoms, ntypes, seed, nf=1) -> coord, atype, box."""
    return random_system
