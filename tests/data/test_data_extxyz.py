"""deeppot.data.extxyz: extended XYZ through ASE, with the DeePMD virial convention (spec §1.2)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from deeppot.data import DataError, load_extxyz

ase = pytest.importorskip("ase")
from ase.build import bulk  # noqa: E402
from ase.calculators.emt import EMT  # noqa: E402
from ase.calculators.singlepoint import SinglePointCalculator  # noqa: E402
from ase.io import read, write  # noqa: E402


def _emt_frame(symbols: list[str], seed: int) -> ase.Atoms:
    """A rattled, sheared fcc cell with EMT energy, forces and stress attached as single-point results."""
    atoms = bulk("Cu", "fcc", a=3.6, cubic=True)
    atoms.set_chemical_symbols(symbols)
    atoms.set_cell(
        atoms.cell.array @ np.array([[1.0, 0.03, 0.0], [0.0, 1.02, 0.01], [0.0, 0.0, 0.99]]), scale_atoms=True
    )
    atoms.rattle(0.05, seed=seed)
    atoms.calc = EMT()
    results = {"energy": atoms.get_potential_energy(), "forces": atoms.get_forces(), "stress": atoms.get_stress()}
    atoms.calc = SinglePointCalculator(atoms, **results)
    return atoms


def _cluster() -> ase.Atoms:
    atoms = ase.Atoms("Cu2", positions=[[0, 0, 0], [0, 0, 2.3]], pbc=False)
    atoms.calc = SinglePointCalculator(atoms, energy=-1.5, forces=[[0, 0, 0.4], [0, 0, -0.4]])
    return atoms


@pytest.fixture
def xyz_file(tmp_path):
    frames = [_emt_frame(["Cu"] * 4, 1), _emt_frame(["Al", "Cu", "Al", "Cu"], 2), _emt_frame(["Cu"] * 4, 3), _cluster()]
    path = tmp_path / "frames.xyz"
    write(path, frames, format="extxyz")
    return path, frames


def test_groups_and_values(xyz_file):
    path, _ = xyz_file
    systems = load_extxyz(path, type_map=["Al", "Cu"])
    assert [s.nframes for s in systems] == [2, 1, 1]  # Cu4 (frames 0, 2), Al2Cu2, Cu2 cluster
    cu4, alcu, cluster = systems
    assert cu4.path == f"{path}#0" and cu4.type_names == ("Al", "Cu")
    on_disk = read(path, index=":")  # positions are written with 8 decimals: compare with what was written
    for s, idx in ((cu4, [0, 2]), (alcu, [1])):
        ref = [on_disk[i] for i in idx]
        np.testing.assert_allclose(s.labels["energy"], [a.get_potential_energy() for a in ref], rtol=1e-12)
        np.testing.assert_allclose(s.coord, [a.get_positions()[s.order] for a in ref], atol=1e-12)
        np.testing.assert_allclose(s.labels["force"], [a.get_forces()[s.order] for a in ref], atol=1e-12)
        np.testing.assert_allclose(s.box, [a.cell.array for a in ref], atol=1e-12)
        assert s.find["virial"]
    np.testing.assert_array_equal(alcu.atype, [0, 0, 1, 1])
    np.testing.assert_array_equal(alcu.order, [0, 2, 1, 3])
    assert cluster.box is None and not cluster.find["virial"]
    np.testing.assert_allclose(cluster.labels["energy"], [-1.5])


def test_virial_sign_is_minus_strain_derivative(xyz_file):
    """DeePMD's virial = -stress·V = -dE/dε: check against central differences of the EMT energy."""
    path, frames = xyz_file
    virial = load_extxyz(path, type_map=["Al", "Cu"])[0].labels["virial"][0].reshape(3, 3)
    atoms, h = frames[0].copy(), 1e-5
    atoms.calc = EMT()

    def energy(eps: np.ndarray) -> float:
        strained = atoms.copy()
        strained.set_cell(atoms.cell.array @ (np.eye(3) + eps), scale_atoms=True)
        strained.calc = EMT()
        return strained.get_potential_energy()

    minus_de = np.zeros((3, 3))
    for a in range(3):
        for b in range(3):
            step = np.zeros((3, 3))
            step[a, b] = h
            minus_de[a, b] = -(energy(step) - energy(-step)) / (2 * h)
    np.testing.assert_allclose(virial, minus_de, atol=1e-6)
    assert abs(virial).max() > 1e-2  # the sheared cell is stressed, so the check has teeth


def test_unknown_element_is_an_error(xyz_file):
    path, _ = xyz_file
    with pytest.raises(DataError, match=r"frames\.xyz.*'Al'"):
        load_extxyz(path, type_map=["Cu"])


def test_label_missing_in_one_frame_is_an_error(tmp_path):
    bare = _emt_frame(["Cu"] * 4, 5)
    bare.calc = None
    path = tmp_path / "mixed.xyz"
    write(path, [_emt_frame(["Cu"] * 4, 4), bare], format="extxyz")
    with pytest.raises(DataError, match=r"mixed\.xyz: frame 1 has no energy"):
        load_extxyz(path, type_map=["Cu"])


def test_partial_pbc_and_missing_file(tmp_path):
    atoms = _emt_frame(["Cu"] * 4, 6)
    atoms.pbc = [True, True, False]
    write(tmp_path / "slab.xyz", atoms, format="extxyz")
    with pytest.raises(DataError, match=r"slab\.xyz: frame 0"):
        load_extxyz(tmp_path / "slab.xyz", type_map=["Cu"])
    with pytest.raises(DataError, match=r"absent\.xyz"):
        load_extxyz(tmp_path / "absent.xyz", type_map=["Cu"])


def test_without_ase_the_error_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ase.io", None)  # makes `import ase.io` fail
    with pytest.raises(ImportError, match=r"pip install deeppot\[ase\]"):
        load_extxyz(tmp_path / "x.xyz", type_map=["Cu"])
