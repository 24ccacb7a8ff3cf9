"""Shared fixtures: small random models and systems, and the location of the shared data sets."""

from __future__ import annotations

from itertools import accumulate, pairwise
from pathlib import Path

import numpy as np
import pytest
import torch

from deeppot.model import EnergyModel, PairData
from deeppot.model.energy_model import type_groups
from deeppot.model.fitting import TypeRows
from deeppot.model.slots import slot_layout
from deeppot.nlist import build_neighbor_data

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
EXAMPLE_DATA = Path(__file__).resolve().parents[1] / "examples" / "water" / "data"


def minimal_input() -> dict:
    """The smallest valid input.json: every other key takes its default."""
    return {
        "model": {"type_map": ["O", "H"],
                  "descriptor": {"type": "se_e2_a", "sel": [4, 8], "rcut": 4.0, "rcut_smth": 0.5,
                                 "neuron": [4, 8], "axis_neuron": 2},
                  "fitting_net": {"neuron": [8]}},
        "learning_rate": {"start_lr": 1e-3},
        "training": {"training_data": {"systems": ["sys_a"]}, "numb_steps": 100},
    }


def model_config(ntypes: int = 2, sel=(24, 24), rcut: float = 4.0, type_one_side: bool = True,
                 precision: str = "float64", **descriptor) -> dict:
    return {
        "type_map": ["O", "H", "C"][:ntypes],
        "descriptor": {"type": "se_e2_a", "sel": list(sel), "rcut": rcut, "rcut_smth": 1.0,
                       "neuron": [4, 8, 16], "axis_neuron": 4, "type_one_side": type_one_side,
                       "resnet_dt": True, "precision": precision, "seed": 1, **descriptor},
        "fitting_net": {"neuron": [16, 16], "resnet_dt": True, "precision": precision, "seed": 2},
    }


def make_model(seed: int = 0, **kwargs) -> EnergyModel:
    """A model with random weights and random (non-trivial) davg/dstd/bias, so every path matters."""
    torch.manual_seed(seed)
    model = EnergyModel.from_config(model_config(**kwargs))
    with torch.no_grad():
        d = model.descriptor
        d.davg[..., 0] = torch.rand(d.ntypes, 1, dtype=d.davg.dtype) * 0.3
        d.dstd[..., 0] = 0.5 + torch.rand(d.ntypes, 1, dtype=d.dstd.dtype)
        d.dstd[..., 1:] = 0.5 + torch.rand(d.ntypes, 1, 1, dtype=d.dstd.dtype)
        model.fitting.out_bias.copy_(torch.randn(d.ntypes, dtype=torch.float64))
    return model


def random_system(natoms: int = 12, ntypes: int = 2, box_len: float = 5.0, nframes: int = 1, seed: int = 0,
                  min_dist: float = 0.9):
    """Random periodic frames with no two atoms closer than min_dist (rejection sampling)."""
    rng = np.random.default_rng(seed)
    box = np.eye(3) * box_len
    frames = []
    for _ in range(nframes):
        pts: list[np.ndarray] = []
        while len(pts) < natoms:
            p = rng.uniform(0, box_len, 3)
            if all(_pbc_dist(p, q, box_len) > min_dist for q in pts):
                pts.append(p)
        frames.append(np.array(pts))
    coord = torch.tensor(np.array(frames))
    atype = torch.tensor(np.arange(natoms) % ntypes)
    return coord, atype, torch.tensor(np.repeat(box[None], nframes, 0))


def _pbc_dist(p: np.ndarray, q: np.ndarray, box_len: float) -> float:
    d = p - q
    d -= box_len * np.round(d / box_len)
    return float(np.linalg.norm(d))


def require_shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("shared data sets (../shared/data) are not available")
    return SHARED_DATA


def pairs_of(model: EnergyModel, nframes: int = 2, seed: int = 0, ntypes: int = 2) -> PairData:
    """Pair geometry of `random_system` frames (one atype for all frames) with the model's rcut and sel."""
    coord, atype, box = random_system(nframes=nframes, ntypes=ntypes, seed=seed)
    nd = build_neighbor_data(coord, atype[None].expand(nframes, -1), box, model.rcut, model.sel)
    return PairData.from_neighbors(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping, model.rcut)


def with_type_rows(pairs: PairData) -> PairData:
    """The same pairs with each type's atoms as its fitting net's rows (what the trainer gives batches of one
    system with several types)."""
    nf, nloc = pairs.center_type.shape
    groups = type_groups(pairs.center_type[0], int(pairs.center_type.max()) + 1)
    return PairData(*pairs.tensors(), groups, pairs.layout, TypeRows(groups, nf, nloc))


def training_gradients(model: EnergyModel, pairs: PairData, analytic: bool = True):
    """Outputs and every parameter's gradient of a loss on energy, forces and virial, as force training takes them;
    analytic: the hand-written derivative (else the autograd reference)."""
    model.analytic_forces = analytic
    out = model.forward_pairs(pairs, create_graph=True)
    loss = 3.0 * out["force"].square().mean() + out["energy"].square().mean() + out["virial"].square().mean()
    return out, torch.autograd.grad(loss, list(model.parameters()))


def assert_same_training(model: EnergyModel, got: tuple, want: tuple, out_tol: dict, grad_tol: dict) -> None:
    """Two `training_gradients` results: energy, force and virial within out_tol, each named parameter's gradient
    within grad_tol."""
    (got_out, got_grads), (want_out, want_grads) = got, want
    for key in ("energy", "force", "virial"):
        torch.testing.assert_close(got_out[key], want_out[key], **out_tol, msg=key)
    for (name, _), a, b in zip(model.named_parameters(), got_grads, want_grads, strict=True):
        torch.testing.assert_close(a, b, **grad_tol, msg=name)


def trimmed_pairs(model: EnergyModel, pairs: PairData) -> PairData:
    """The same pairs in lists only as wide as their most neighbours per type and a stand-in slot for the rest
    (what the trainer builds)."""
    used = (pairs.neighbor_type[..., None] == torch.arange(len(model.sel), device=pairs.rij.device)).sum(2)
    widths = tuple(int(c) for c in used.flatten(0, 1).amax(0))
    layout = slot_layout(model.sel, widths, pairs.rij.device)
    assert sum(layout.sel) < sum(model.sel)
    kept = layout.index
    return PairData(pairs.rij[..., kept, :], pairs.nlist_loc[..., kept], pairs.center_type,
                    pairs.neighbor_type[..., kept], pairs.groups, layout)


def padding_chunks(pairs: PairData, block: int) -> int:
    """How many chunks of `block` slots of trimmed pairs hold only padding after a padded stand-in in slot 0: the
    chunks the fused training kernels do not recompute (`deeppot.kernels.embedding`)."""
    n = 0
    for a, b in pairwise([0, *accumulate(pairs.layout.sel)]):
        real = (pairs.nlist_loc[..., a:b] >= 0).sum(-1)  # neighbours come after the stand-in
        stand_in = pairs.nlist_loc[..., a] < 0
        n += sum(int((stand_in & (1 + real <= j0)).sum()) for j0 in range(block, b - a, block))
    return n


@pytest.fixture(autouse=True)
def one_thread():
    """One intra-op thread for tests of tiny models and steps: as fast, and no OpenMP spin-waiting when other
    processes share the cores (2 threads were 20x slower than 1 on a loaded 2-core machine). Autouse wherever it is
    imported: a conftest that imports it applies it to its folder."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
