"""deeppot.data.system: reading DeePMD system directories (spec §1.1-1.2)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from deeppot.data import DataError, find_systems, load_system, load_systems


def test_unsorted_load_returns_file_arrays(make_system):
    sys_dir, ref = make_system("sys", [0, 1, 0, 1], set_frames=(3,))
    s = load_system(sys_dir, sort_atoms=False)
    assert (s.nframes, s.natoms) == (3, 4)
    np.testing.assert_array_equal(s.atype, [0, 1, 0, 1])
    np.testing.assert_array_equal(s.order, np.arange(4))
    for key in ("coord", "box"):
        np.testing.assert_array_equal(getattr(s, key), ref[key])
    for key in ("energy", "force", "virial"):
        np.testing.assert_array_equal(s.labels[key], ref[key])
    assert s.labels["energy"].shape == (3,) and s.coord.dtype == np.float64
    assert s.find == {
        "energy": True,
        "force": True,
        "virial": True,
        "atom_ener": False,
        "atom_pref": False,
        "fparam": False,
        "aparam": False,
    }


def test_missing_labels_hold_defaults(make_system):
    sys_dir, _ = make_system("sys", [0, 0, 1], set_frames=(2,), labels=())
    s = load_system(sys_dir)
    assert not any(s.find.values())
    np.testing.assert_array_equal(s.labels["energy"], np.zeros(2))
    np.testing.assert_array_equal(s.labels["force"], np.zeros((2, 3, 3)))
    np.testing.assert_array_equal(s.labels["atom_pref"], np.ones((2, 3)))
    assert s.labels["fparam"].shape == (2, 0) and s.labels["aparam"].shape == (2, 3, 0)


def test_optional_labels_and_atomic_alias(make_system):
    sys_dir, ref = make_system("sys", [1, 0], labels=("atom_pref", "fparam", "aparam"))
    ener = np.arange(6.0).reshape(3, 2)
    np.save(sys_dir / "set.000" / "atomic_ener.npy", ener)  # alias of atom_ener.npy
    s = load_system(sys_dir)
    assert s.find["atom_ener"] and s.find["atom_pref"] and s.find["fparam"] and s.find["aparam"]
    np.testing.assert_array_equal(s.labels["atom_ener"], ener[:, [1, 0]])  # sorted: file atom 1 first
    np.testing.assert_array_equal(s.labels["atom_pref"], ref["atom_pref"][:, [1, 0]])
    np.testing.assert_array_equal(s.labels["fparam"], ref["fparam"])
    np.testing.assert_array_equal(s.labels["aparam"], ref["aparam"][:, [1, 0]])


def test_sorting_permutes_every_per_atom_array(make_system):
    atype = [1, 0, 2, 0, 1]
    sys_dir, ref = make_system("sys", atype, labels=("force", "atom_ener"))
    s = load_system(sys_dir)
    expected_order = [1, 3, 0, 4, 2]  # stable: type 0 atoms in file order, then type 1, then type 2
    np.testing.assert_array_equal(s.order, expected_order)
    np.testing.assert_array_equal(s.atype, [0, 0, 1, 1, 2])
    np.testing.assert_array_equal(s.coord, ref["coord"][:, expected_order])
    np.testing.assert_array_equal(s.labels["force"], ref["force"][:, expected_order])
    np.testing.assert_array_equal(s.labels["atom_ener"], ref["atom_ener"][:, expected_order])
    np.testing.assert_array_equal(s.box, ref["box"])  # per-frame arrays are not permuted


def test_type_map_remaps_by_name(make_system):
    sys_dir, ref = make_system("sys", [0, 1, 1, 0], type_names=["H", "O"])
    s = load_system(sys_dir, type_map=["O", "H"], sort_atoms=False)
    np.testing.assert_array_equal(s.atype, [1, 0, 0, 1])  # H -> 1, O -> 0
    assert s.type_names == ("O", "H")
    sorted_s = load_system(sys_dir, type_map=["O", "H"])
    np.testing.assert_array_equal(sorted_s.order, [1, 2, 0, 3])  # the O atoms (file 1, 2) come first
    np.testing.assert_array_equal(sorted_s.coord, ref["coord"][:, [1, 2, 0, 3]])


def test_type_map_with_extra_model_types(make_system):
    sys_dir, _ = make_system("sys", [0, 1], type_names=["Cu", "Al"])
    s = load_system(sys_dir, type_map=["Al", "Ni", "Cu"], sort_atoms=False)
    np.testing.assert_array_equal(s.atype, [2, 0])


def test_sets_concatenate_in_order(make_system):
    sys_dir, ref = make_system("sys", [0, 1], set_frames=(2, 3, 1))
    s = load_system(sys_dir, sort_atoms=False)
    assert s.nframes == 6
    np.testing.assert_array_equal(s.coord, ref["coord"])
    np.testing.assert_array_equal(s.labels["energy"], ref["energy"])
    np.testing.assert_array_equal(s.coord[2], np.load(sys_dir / "set.001" / "coord.npy")[0].reshape(2, 3))


def test_energy_1d_and_coord_1d_single_frame(make_system):
    sys_dir, ref = make_system("sys", [0, 0], set_frames=(1,))
    np.save(sys_dir / "set.000" / "coord.npy", ref["coord"].reshape(-1))  # a 1-D file is one frame
    np.save(sys_dir / "set.000" / "energy.npy", ref["energy"].reshape(-1))  # (nf,) instead of (nf, 1)
    s = load_system(sys_dir)
    np.testing.assert_array_equal(s.coord, ref["coord"])
    np.testing.assert_array_equal(s.labels["energy"], ref["energy"])


def test_nopbc_gives_no_box(make_system):
    sys_dir, _ = make_system("sys", [0, 1], nopbc=True)
    s = load_system(sys_dir)
    assert s.box is None and s.nopbc


def test_find_systems_recursive_and_sorted(tmp_path, make_system):
    for name in ("root/b", "root/a/deep/sys", "root/a", "other"):
        make_system(name, [0])
    found = find_systems([tmp_path / "root", tmp_path / "other"])
    assert found == [str(tmp_path / p) for p in ("root/a", "root/a/deep/sys", "root/b", "other")]
    assert find_systems(str(tmp_path / "root/b")) == [str(tmp_path / "root/b")]  # the path itself
    assert find_systems(tmp_path / "root", rglob_patterns=["b"]) == [str(tmp_path / "root/b")]


def test_find_systems_errors(tmp_path):
    with pytest.raises(DataError, match="nowhere"):
        find_systems(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="empty"):
        find_systems([tmp_path / "empty"])
    (tmp_path / "data.h5").write_bytes(b"")
    with pytest.raises(DataError, match=r"data\.h5: HDF5"):
        find_systems(tmp_path / "data.h5")


def test_load_systems_uses_longest_common_type_map(tmp_path, make_system):
    make_system("d/a", [0, 0], type_names=["O"])
    make_system("d/b", [1, 0], type_names=["O", "H"])
    systems = load_systems(tmp_path / "d")
    assert [s.type_names for s in systems] == [("O", "H"), ("O", "H")]
    make_system("d/c", [0], type_names=["H"])
    with pytest.raises(DataError, match=r"type_map\.raw"):
        load_systems(tmp_path / "d")


def _save(sys_dir: Path, name: str, value: np.ndarray) -> None:
    np.save(sys_dir / "set.000" / name, value)


def _with_nan(name: str, frame: int, value: float = np.nan):
    def corrupt(sys_dir: Path) -> None:
        arr = np.load(sys_dir / "set.000" / name)
        arr[frame, 0] = value
        _save(sys_dir, name, arr)

    return corrupt


BAD_INPUTS = {
    "missing type.raw": (lambda d: (d / "type.raw").unlink(), "type.raw"),
    "negative type": (lambda d: (d / "type.raw").write_text("0 -1 1\n"), "type.raw"),
    "non-integer type": (lambda d: (d / "type.raw").write_text("0 x 1\n"), "type.raw"),
    "type beyond type_map.raw": (lambda d: (d / "type.raw").write_text("0 1 2\n"), "type.raw"),
    "name not in type_map": (lambda d: (d / "type_map.raw").write_text("O\nC\n"), "type_map.raw.*'C'"),
    "no set dir": (lambda d: shutil.rmtree(d / "set.000"), "set"),
    "missing coord": (lambda d: (d / "set.000" / "coord.npy").unlink(), "coord.npy"),
    "coord not multiple": (lambda d: _save(d, "coord.npy", np.zeros(4 * 9 + 1)), "coord.npy.*multiple"),
    "force not multiple": (lambda d: _save(d, "force.npy", np.zeros((4, 8))), "force.npy.*multiple"),
    "force frame count": (lambda d: _save(d, "force.npy", np.zeros((5, 9))), "force.npy.*5 frames"),
    "virial not multiple": (lambda d: _save(d, "virial.npy", np.zeros((4, 8))), "virial.npy"),
    "energy frame count": (lambda d: _save(d, "energy.npy", np.zeros(3)), "energy.npy.*3 frames"),
    "box frame count": (lambda d: _save(d, "box.npy", np.zeros((2, 9))), "box.npy"),
    "aparam not divisible": (lambda d: _save(d, "aparam.npy", np.zeros((4, 4))), "aparam.npy"),
    "missing box": (lambda d: (d / "set.000" / "box.npy").unlink(), "box.npy"),
    "zero-volume box": (lambda d: _save(d, "box.npy", np.zeros((4, 9))), "box.npy.*frame 0"),
    "not an npy": (lambda d: (d / "set.000" / "force.npy").write_text("junk"), "force.npy"),
    "nan coord": (_with_nan("coord.npy", 2), "coord.npy.*frame 2"),
    "inf box": (_with_nan("box.npy", 1, np.inf), "box.npy.*frame 1"),
    "nan force": (_with_nan("force.npy", 3), "force.npy.*frame 3"),
    "nan energy": (_with_nan("energy.npy", 1), "energy.npy.*frame 1"),
    "nan virial": (_with_nan("virial.npy", 0), "virial.npy.*frame 0"),
    "mixed type": (lambda d: _save(d, "real_atom_types.npy", np.zeros((4, 3))), "mixed_type"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_raises_data_error_naming_file(make_system, case):
    sys_dir, _ = make_system("sys", [0, 1, 1], set_frames=(4,), type_names=["O", "H"])
    load_system(sys_dir, type_map=["O", "H"])  # the intact system loads
    corrupt, pattern = BAD_INPUTS[case]
    corrupt(sys_dir)
    with pytest.raises(DataError, match=pattern) as info:
        load_system(sys_dir, type_map=["O", "H"])
    assert str(sys_dir) in str(info.value)


def test_label_in_one_set_only_is_an_error(make_system):
    sys_dir, _ = make_system("sys", [0, 1], set_frames=(2, 2))
    (sys_dir / "set.001" / "virial.npy").unlink()
    with pytest.raises(DataError, match=r"set\.001.*virial"):
        load_system(sys_dir)


def test_nan_in_second_set_names_that_file(make_system):
    sys_dir, _ = make_system("sys", [0, 1], set_frames=(2, 3))
    force = np.load(sys_dir / "set.001" / "force.npy")
    force[1, 4] = np.nan
    np.save(sys_dir / "set.001" / "force.npy", force)
    with pytest.raises(DataError, match=r"set\.001/force\.npy.*frame 1"):
        load_system(sys_dir)
