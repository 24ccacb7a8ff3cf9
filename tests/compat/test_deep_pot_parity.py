"""`deeppot.DeepPot` on DeePMD-kit-written models against DeePMD-kit 3.2.0 (`deepmd.dpmodel`), float64.

Several frames at once, periodic (the strained copper cells are triclinic) and non-periodic, atomic energies.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("deepmd.dpmodel")

from compat.deepmd_ref import deepmd_build, deepmd_load, deepmd_save, frames, model_section, randomize_model_dict

from deeppot.infer import DeepPot


def deepmd_call(dp_model, coord: np.ndarray, atype: np.ndarray, box: np.ndarray | None):
    nf = coord.shape[0]
    out = dp_model.call(coord.reshape(nf, -1), np.tile(atype, (nf, 1)), None if box is None else box.reshape(nf, 9))
    return np.asarray(out["energy"]).reshape(nf), np.asarray(out["atom_energy"]).reshape(nf, -1)


@pytest.mark.parametrize("name", ["water", "copper", "alloy"])
@pytest.mark.parametrize("periodic", [True, False])
def test_deep_pot_equals_deepmd(name, periodic, tmp_path):
    section = model_section(name, type_one_side=name != "alloy")
    deepmd_save(tmp_path / "m.dp", randomize_model_dict(deepmd_build(section).serialize(), 3), section)
    coord, atype, box, _ = frames(name, 3)
    box = box if periodic else None
    energy, atom_energy = deepmd_call(deepmd_load(tmp_path / "m.dp"), coord, atype, box)
    cells = None if box is None else box.reshape(3, 9)
    e, _, _, ae, _ = DeepPot(str(tmp_path / "m.dp"), "cpu").eval(coord, cells, atype, atomic=True)
    scale = np.abs(energy).max()
    assert np.abs(e[:, 0] - energy).max() < 1e-10 * scale
    assert np.abs(ae[..., 0] - atom_energy).max() < 1e-10 * np.abs(atom_energy).max()


def deepmd_descriptor(dp_model, coord: np.ndarray, atype: np.ndarray, box: np.ndarray | None) -> np.ndarray:
    """DeePMD-kit's descriptor of each atom (what its `eval_descriptor` returns), from its own neighbour list."""
    from deepmd.dpmodel.utils.nlist import extend_input_and_build_neighbor_list

    descriptor = dp_model.atomic_model.descriptor
    nf = coord.shape[0]
    ext_coord, ext_atype, mapping, nlist = extend_input_and_build_neighbor_list(
        coord.reshape(nf, -1), np.tile(atype, (nf, 1)), descriptor.get_rcut(), descriptor.get_sel(),
        box=None if box is None else box.reshape(nf, 9))
    return np.asarray(descriptor.call(ext_coord.reshape(nf, -1), ext_atype, nlist, mapping)[0])


@pytest.mark.parametrize("name", ["water", "copper", "alloy"])
@pytest.mark.parametrize("periodic", [True, False])
def test_eval_descriptor_equals_deepmd(name, periodic, tmp_path):
    section = model_section(name, type_one_side=name != "alloy")
    deepmd_save(tmp_path / "m.dp", randomize_model_dict(deepmd_build(section).serialize(), 3), section)
    coord, atype, box = frames(name, 2)[:3]
    box = box if periodic else None
    want = deepmd_descriptor(deepmd_load(tmp_path / "m.dp"), coord, atype, box)
    got = DeepPot(str(tmp_path / "m.dp"), "cpu").eval_descriptor(coord, None if box is None else box.reshape(2, 9),
                                                                 atype)
    assert got.shape == want.shape == (2, len(atype), 16 * 4)
    assert np.abs(got - want).max() < 1e-10 * np.abs(want).max()


def test_queries_equal_deepmd(tmp_path):
    """What code written against `deepmd.infer.DeepPot` asks besides eval, on a three-type model one of whose
    types has a zero output bias (not observed); DeePMD-kit's NumPy backend does not count parameters."""
    import torch
    from deepmd.infer import DeepPot as DeepmdDeepPot
    from helpers import make_model

    from deeppot.io import save_model

    model = make_model(ntypes=3, sel=(8, 8, 8))
    with torch.no_grad():
        model.fitting.out_bias[1] = 0.0
    save_model(model, tmp_path / "m.dp")
    ours, theirs = DeepPot(str(tmp_path / "m.dp"), "cpu"), DeepmdDeepPot(str(tmp_path / "m.dp"))
    for name in ("get_type_map", "get_ntypes", "get_rcut", "get_dim_fparam", "get_dim_aparam", "get_sel_type",
                 "get_ntypes_spin", "has_default_fparam", "get_observed_types", "get_model_def_script"):
        assert getattr(ours, name)() == getattr(theirs, name)(), name
    for name in ("has_efield", "has_spin", "has_hessian", "use_spin"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert ours.get_model_size() == {"descriptor": 3 * 216, "fitting-net": 3 * 1345, "total": 3 * (216 + 1345)}


@pytest.mark.parametrize("name", ["water", "alloy"])
def test_eval_fitting_last_layer_equals_deepmd(name, tmp_path):
    """The fitting nets' last hidden layer: DeePMD-kit's middle output on its own descriptor."""
    section = model_section(name, type_one_side=name != "alloy")
    deepmd_save(tmp_path / "m.dp", randomize_model_dict(deepmd_build(section).serialize(), 3), section)
    coord, atype, box = frames(name, 2)[:3]
    dp_model = deepmd_load(tmp_path / "m.dp")
    fitting = dp_model.atomic_model.fitting_net
    fitting.set_return_middle_output(True)
    desc = deepmd_descriptor(dp_model, coord, atype, box)
    want = np.asarray(fitting.call(desc, np.tile(atype, (2, 1)))["middle_output"])
    got = DeepPot(str(tmp_path / "m.dp"), "cpu").eval_fitting_last_layer(coord, box.reshape(2, 9), atype)
    assert got.shape == want.shape == (2, len(atype), 16)
    assert np.abs(got - want).max() < 1e-10 * np.abs(want).max()
