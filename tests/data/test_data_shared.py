"""The shared DeePMD sets (/work/shared/data) load with the shapes their README gives."""

from __future__ import annotations

import numpy as np

from deeppot.data import find_systems, load_system, load_systems


def test_water_data_0(shared_data):
    s = load_system(shared_data / "water" / "data_0", type_map=["O", "H"])
    assert (s.nframes, s.natoms) == (80, 192)
    assert s.coord.shape == (80, 192, 3) and s.box.shape == (80, 3, 3)
    assert s.labels["force"].shape == (80, 192, 3) and s.labels["energy"].shape == (80,)
    assert s.find["energy"] and s.find["force"] and not s.find["virial"]
    assert s.coord.dtype == np.float64  # stored float32 on disk
    np.testing.assert_array_equal(np.bincount(s.atype), [64, 128])  # H2O: 64 O then 128 H
    assert np.all(np.diff(s.atype) >= 0)


def test_water_remapped_to_other_type_order(shared_data):
    s = load_system(shared_data / "water" / "data_0", type_map=["H", "O"], sort_atoms=False)
    raw = np.loadtxt(shared_data / "water" / "data_0" / "type.raw", dtype=int)
    np.testing.assert_array_equal(s.atype, 1 - raw)


def test_copper(shared_data):
    systems = load_systems(shared_data / "copper", type_map=["Cu"])
    assert len(systems) == 21
    for s in systems:
        assert (s.nframes, s.natoms) == (100, 108)
        assert s.find["virial"] and s.labels["virial"].shape == (100, 9)


def test_alloy_train(shared_data):
    paths = find_systems(shared_data / "alloy" / "train")
    assert len(paths) == 16 and paths == sorted(paths)
    systems = load_systems(paths, type_map=["Al", "Cu", "Ni"])
    assert all((s.nframes, s.natoms) == (100, 108) for s in systems)
    assert all(s.find["virial"] and s.type_names == ("Al", "Cu", "Ni") for s in systems)
