"""DeePMD systems in HDF5 files (spec §1.1): `file.h5#/group` and bare files holding several systems."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from deeppot.data import DataError, find_systems, load_system, load_systems


def npy_to_h5(sys_dir: Path, group: h5py.Group) -> None:
    """Copy a DeePMD npy system into an HDF5 group in DeePMD's layout, file by file, with h5py only."""
    group.create_dataset("type.raw", data=np.loadtxt(sys_dir / "type.raw", dtype=np.int64, ndmin=1))
    if (sys_dir / "type_map.raw").is_file():
        group.create_dataset("type_map.raw", data=np.array((sys_dir / "type_map.raw").read_text().split(), "S"))
    if (sys_dir / "nopbc").exists():
        group.create_dataset("nopbc", data=True)
    for set_dir in sorted(sys_dir.glob("set.*")):
        sub = group.create_group(set_dir.name)
        for npy in sorted(set_dir.glob("*.npy")):
            sub.create_dataset(npy.name, data=np.load(npy))


def assert_same_system(a, b) -> None:
    for field in ("atype", "coord", "box", "order"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
    assert a.find == b.find and a.type_names == b.type_names
    for key in a.labels:
        np.testing.assert_array_equal(a.labels[key], b.labels[key], err_msg=key)


@pytest.mark.parametrize("nopbc", [False, True])
@pytest.mark.parametrize("sort_atoms", [False, True])
def test_round_trip_equals_npy(tmp_path, make_system, nopbc, sort_atoms):
    sys_dir, _ = make_system("sys", [1, 0, 1, 1, 0], set_frames=(2, 3), type_names=["O", "H"], nopbc=nopbc,
                             labels=("energy", "force", "virial", "atom_pref", "fparam"))
    with h5py.File(tmp_path / "data.hdf5", "w") as f:
        npy_to_h5(sys_dir, f.create_group("water/sys"))
    for type_map in (None, ["H", "O", "C"]):
        ours = load_system(f"{tmp_path / 'data.hdf5'}#/water/sys", type_map, sort_atoms)
        assert ours.path == f"{tmp_path / 'data.hdf5'}#/water/sys"
        assert_same_system(ours, load_system(sys_dir, type_map, sort_atoms))


def test_deepmd_reads_the_same_file(tmp_path, make_system):
    data_mod = pytest.importorskip("deepmd.utils.data")
    sys_dir, written = make_system("sys", [0, 1, 1], set_frames=(4,), type_names=["O", "H"])
    with h5py.File(tmp_path / "d.h5", "w") as f:
        npy_to_h5(sys_dir, f.create_group("sys"))
    spec = f"{tmp_path / 'd.h5'}#/sys"
    theirs = data_mod.DeepmdData(spec, type_map=["O", "H"])  # the layout check: DeePMD-kit's own reader
    assert theirs.get_natoms() == 3 and theirs.get_type_map() == ["O", "H"]
    theirs_coord = np.asarray(theirs._load_set(theirs.dirs[0])["coord"]).reshape(4, 3, 3)
    np.testing.assert_array_equal(load_system(spec, sort_atoms=False).coord, theirs_coord)
    np.testing.assert_array_equal(load_system(spec, sort_atoms=False).coord, written["coord"])


def test_bare_file_holds_several_systems(tmp_path, make_system):
    dirs = [make_system(name, atype, type_names=["O", "H"], seed=i)[0]
            for i, (name, atype) in enumerate([("b", [0, 1]), ("a", [1, 1, 0])])]
    with h5py.File(tmp_path / "all.h5", "w") as f:
        npy_to_h5(dirs[0], f.create_group("b"))
        npy_to_h5(dirs[1], f.create_group("nested/a"))
        f.create_group("empty")  # no type.raw: not a system
    file = str(tmp_path / "all.h5")
    assert find_systems(file) == [f"{file}#/b", f"{file}#/nested/a"]
    assert find_systems([file, f"{file}#/b", str(dirs[0])]) == [f"{file}#/b", f"{file}#/nested/a", str(dirs[0])]
    loaded = load_systems(file)
    assert [s.natoms for s in loaded] == [2, 3]
    assert_same_system(loaded[1], load_system(dirs[1], ["O", "H"]))


def test_single_system_at_the_root(tmp_path, make_system):
    sys_dir, _ = make_system("sys", [0, 1], type_names=["O", "H"])
    with h5py.File(tmp_path / "one.h5", "w") as f:
        npy_to_h5(sys_dir, f)
    assert find_systems(tmp_path / "one.h5") == [f"{tmp_path / 'one.h5'}#/"]
    assert_same_system(load_system(f"{tmp_path / 'one.h5'}#/"), load_system(sys_dir))


def test_errors_name_file_and_group(tmp_path, make_system):
    sys_dir, _ = make_system("sys", [0, 1], type_names=["O", "H"])
    with h5py.File(tmp_path / "d.h5", "w") as f:
        npy_to_h5(sys_dir, f.create_group("sys"))
        del f["sys/set.000/coord.npy"]
        f.create_group("empty")
    with pytest.raises(DataError, match=r"d\.h5#/nope: no such group"):
        find_systems(f"{tmp_path / 'd.h5'}#/nope")
    with pytest.raises(DataError, match=r"d\.h5#/empty: no DeePMD system"):
        find_systems(f"{tmp_path / 'd.h5'}#/empty")
    with pytest.raises(DataError, match=r"d\.h5#/sys/set\.000/coord\.npy: missing coord\.npy"):
        load_system(f"{tmp_path / 'd.h5'}#/sys")
    with pytest.raises(DataError, match=r"missing\.h5: HDF5 file does not exist"):
        find_systems(tmp_path / "missing.h5")
    (tmp_path / "text.h5").write_text("not hdf5")
    with pytest.raises(DataError, match=r"text\.h5: HDF5 file cannot be read"):
        find_systems(tmp_path / "text.h5")
    with pytest.raises(DataError, match=r"type 'O' not in type_map \['Cu'\]"):
        load_systems(tmp_path / "d.h5#/sys", ["Cu"])
