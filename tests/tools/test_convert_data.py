"""`deeppot convert-data` against dpdata's own deepmd/npy writer on the same input (skipped without dpdata)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from deeppot.cli.main import main
from deeppot.data import load_system

dpdata = pytest.importorskip("dpdata")


def write_npy_system(path: Path, nframes: int = 5) -> Path:
    """A small labelled periodic DeePMD system, atoms of two types interleaved."""
    rng = np.random.default_rng(1)
    (path / "set.000").mkdir(parents=True)
    (path / "type.raw").write_text("1 0 1 1 0\n")
    (path / "type_map.raw").write_text("O\nH\n")
    arrays = {"coord": rng.uniform(0, 5, (nframes, 15)), "box": np.tile(np.eye(3).reshape(9) * 5, (nframes, 1)),
              "energy": rng.normal(size=nframes), "force": rng.normal(size=(nframes, 15)),
              "virial": rng.normal(size=(nframes, 9))}
    for key, value in arrays.items():
        np.save(path / "set.000" / f"{key}.npy", value)
    return path


def write_extxyz(path: Path) -> Path:
    ase_io = pytest.importorskip("ase.io")
    from ase import Atoms
    from ase.calculators.singlepoint import SinglePointCalculator

    rng = np.random.default_rng(2)
    frames = []
    for symbols in ("OH2", "OH2", "OH2", "CH3"):
        atoms = Atoms(symbols, positions=rng.uniform(0, 4, (len(Atoms(symbols)), 3)), cell=np.eye(3) * 5, pbc=True)
        atoms.calc = SinglePointCalculator(atoms, energy=rng.normal(), forces=rng.normal(size=(len(atoms), 3)),
                                           stress=rng.normal(size=6))
        frames.append(atoms)
    ase_io.write(path, frames, format="extxyz")
    return path


def assert_same_tree(ours: Path, theirs: Path) -> None:
    """Same system folders, raw files with the same tokens, npy files with equal arrays (float64 both)."""
    files = sorted(p.relative_to(ours) for p in ours.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(theirs) for p in theirs.rglob("*") if p.is_file())
    assert any(f.suffix == ".npy" for f in files)
    for f in files:
        if f.suffix == ".npy":
            a, b = np.load(ours / f), np.load(theirs / f)
            assert a.shape == b.shape and a.dtype == b.dtype, f
            np.testing.assert_array_equal(a, b, err_msg=str(f))
        else:
            assert (ours / f).read_text().split() == (theirs / f).read_text().split(), f


def test_deepmd_npy_in_sets_equals_dpdata(tmp_path):
    src = write_npy_system(tmp_path / "src")
    assert main(["convert-data", str(src), "-f", "deepmd/npy", "-o", str(tmp_path / "ours"), "--set-size", "2"]) == 0
    dpdata.LabeledSystem(str(src), fmt="deepmd/npy").to("deepmd/npy", str(tmp_path / "theirs"), set_size=2,
                                                         prec=np.float64)
    assert_same_tree(tmp_path / "ours", tmp_path / "theirs")
    assert sorted(p.name for p in (tmp_path / "ours").glob("set.*")) == ["set.000", "set.001", "set.002"]
    converted, original = load_system(tmp_path / "ours"), load_system(src)
    np.testing.assert_array_equal(converted.coord, original.coord)
    np.testing.assert_array_equal(converted.labels["force"], original.labels["force"])
    np.testing.assert_array_equal(converted.labels["virial"], original.labels["virial"])


def test_type_map_equals_dpdata_apply_type_map(tmp_path):
    src = write_npy_system(tmp_path / "src")
    type_map = ["H", "C", "O"]
    assert main(["convert-data", str(src), "-f", "deepmd/npy", "-o", str(tmp_path / "ours"), "-t", *type_map]) == 0
    system = dpdata.LabeledSystem(str(src), fmt="deepmd/npy")
    system.apply_type_map(type_map)
    system.to("deepmd/npy", str(tmp_path / "theirs"), prec=np.float64)
    assert_same_tree(tmp_path / "ours", tmp_path / "theirs")
    assert (tmp_path / "ours" / "type.raw").read_text().split() == ["0", "2", "0", "0", "2"]


def test_extxyz_with_two_compositions_equals_dpdata(tmp_path):
    src = write_extxyz(tmp_path / "frames.xyz")
    assert main(["convert-data", str(src), "-f", "extxyz", "-o", str(tmp_path / "ours"), "--set-size", "2"]) == 0
    dpdata.MultiSystems.from_file(str(src), fmt="extxyz").to("deepmd/npy", str(tmp_path / "theirs"), set_size=2,
                                                               prec=np.float64)
    assert_same_tree(tmp_path / "ours", tmp_path / "theirs")
    assert len([p for p in (tmp_path / "ours").iterdir() if p.is_dir()]) == 2  # 3 x H2O and 1 x CH3


@pytest.mark.parametrize(("args", "message"), [
    (["src", "-f", "nosuch/fmt", "-o", "out"], "unknown format 'nosuch/fmt'; dpdata reads:"),
    (["missing", "-f", "deepmd/npy", "-o", "out"], "missing: input does not exist"),
    (["src", "-f", "deepmd/npy", "-o", "out", "-t", "H"], "element(s) ['O'] are not in --type-map ['H']"),
    (["src", "-f", "deepmd/npy", "-o", "src"], "src: exists and is not an empty folder"),
    (["src", "-f", "deepmd/npy", "-o", "out", "--set-size", "0"], "--set-size must be >= 1"),
])
def test_user_errors(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    write_npy_system(tmp_path / "src")
    assert main(["convert-data", *args]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_without_dpdata_says_how_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "dpdata", None)  # `import dpdata` now raises ImportError
    write_npy_system(tmp_path / "src")
    assert main(["convert-data", str(tmp_path / "src"), "-f", "deepmd/npy", "-o", str(tmp_path / "out")]) == 1
    assert "pip install 'deeppot[dpdata]'" in capsys.readouterr().err


def test_unlabelled_poscar_equals_dpdata(tmp_path):
    build = pytest.importorskip("ase.build")
    ase_io = pytest.importorskip("ase.io")
    ase_io.write(tmp_path / "POSCAR", build.bulk("Cu", "fcc", a=3.6).repeat(2), format="vasp")
    assert main(["convert-data", str(tmp_path / "POSCAR"), "-f", "vasp/poscar", "-o", str(tmp_path / "ours")]) == 0
    dpdata.System(str(tmp_path / "POSCAR"), fmt="vasp/poscar").to("deepmd/npy", str(tmp_path / "theirs"),
                                                                  prec=np.float64)
    assert_same_tree(tmp_path / "ours", tmp_path / "theirs")
    assert not (tmp_path / "ours" / "set.000" / "energy.npy").exists()
    assert load_system(tmp_path / "ours").find["energy"] is False
