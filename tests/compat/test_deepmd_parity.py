"""Models both ways between deeppot and DeePMD-kit 3.2.0 (NumPy backend), proven equal on the shared data sets.

deeppot -> DeePMD-kit: a random deeppot model written with deeppot.io.save_model, read and evaluated by DeePMD-kit.
DeePMD-kit -> deeppot: a model built and initialised by DeePMD-kit, written by DeePMD-kit, read by load_model.
Statistics (davg, dstd, bias_atom_e, out_bias) are random in every slot, so each normalisation path counts.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

pytest.importorskip("deepmd.dpmodel")

from compat.deepmd_ref import (
    deepmd_build,
    deepmd_energy,
    deepmd_load,
    deepmd_save,
    deeppot_eval,
    frames,
    model_section,
    randomize_model,
    randomize_model_dict,
    rel_diff,
)

from deeppot.io import load_model, save_model
from deeppot.model import EnergyModel

TOL = {"float64": 1e-10, "float32": 1e-5}

# case -> (data set, model_section options)
CASES = {
    "water-one_side-f64-tanh": ("water", {}),
    "water-two_side-f64-gelu-exclude-no_resnet": (
        "water", {"type_one_side": False, "activation": "gelu", "resnet_dt": False, "exclude_types": [[0, 1]]}),
    "water-two_side-f32": ("water", {"type_one_side": False, "precision": "float32"}),
    "copper-f64-gelu": ("copper", {"activation": "gelu", "neuron": [8, 16]}),
    "copper-f32-no_resnet": ("copper", {"precision": "float32", "resnet_dt": False}),
    "alloy-two_side-f64-exclude-protection": (
        "alloy", {"type_one_side": False, "exclude_types": [[0, 2]], "env_protection": 0.1}),
    "alloy-two_side-f32-gelu": ("alloy", {"type_one_side": False, "precision": "float32", "activation": "gelu"}),
}
REVERSE_CASES = ["water-two_side-f64-gelu-exclude-no_resnet", "copper-f64-gelu", "alloy-two_side-f32-gelu",
                 "water-one_side-f64-tanh"]
NFRAMES = 2


def _seed(case: str) -> int:
    return zlib.crc32(case.encode())  # stable across runs, unlike hash()


def _check(case: str, energy: np.ndarray, atom_energy: np.ndarray, ref: tuple[np.ndarray, np.ndarray],
           precision: str) -> None:
    e_rel, ae_rel = rel_diff(energy, ref[0]), rel_diff(atom_energy, ref[1])
    print(f"{case}: max rel diff energy {e_rel:.2e}, atom energy {ae_rel:.2e}")
    assert e_rel < TOL[precision], (case, e_rel)
    assert ae_rel < TOL[precision], (case, ae_rel)


@pytest.mark.parametrize("case", list(CASES))
def test_deeppot_model_in_deepmd(case, tmp_path):
    name, options = CASES[case]
    section = model_section(name, **options)
    model = randomize_model(EnergyModel.from_config(section), _seed(case))
    coord, atype, box, _ = frames(name, NFRAMES)
    save_model(model, tmp_path / "model.dp")
    ref = deepmd_energy(deepmd_load(tmp_path / "model.dp"), coord, atype, box)
    ours = deeppot_eval(model, coord, atype, box)
    _check(case, ours["energy"], ours["atom_energy"], ref, section["descriptor"]["precision"])


@pytest.mark.parametrize("case", REVERSE_CASES)
def test_deepmd_model_in_deeppot(case, tmp_path):
    name, options = CASES[case]
    section = model_section(name, **options)
    model_dict = randomize_model_dict(deepmd_build(section).serialize(), _seed(case))
    deepmd_save(tmp_path / "model.dp", model_dict, section)
    coord, atype, box, _ = frames(name, NFRAMES)
    ref = deepmd_energy(deepmd_load(tmp_path / "model.dp"), coord, atype, box)
    ours = deeppot_eval(load_model(tmp_path / "model.dp"), coord, atype, box)
    _check(case, ours["energy"], ours["atom_energy"], ref, section["descriptor"]["precision"])


@pytest.mark.parametrize("writer", ["deeppot", "deepmd"])
def test_yaml_both_ways(writer, tmp_path):
    name, options = CASES["copper-f64-gelu"]  # a small model: YAML text is slow to write and parse
    section = model_section(name, **options)
    path = tmp_path / "model.yaml"
    if writer == "deeppot":
        save_model(randomize_model(EnergyModel.from_config(section), 7), path)
    else:
        deepmd_save(path, randomize_model_dict(deepmd_build(section).serialize(), 7), section)
    coord, atype, box, _ = frames(name, 1)
    ref = deepmd_energy(deepmd_load(path), coord, atype, box)
    ours = deeppot_eval(load_model(path), coord, atype, box)
    _check(f"yaml written by {writer}", ours["energy"], ours["atom_energy"], ref, "float64")


def test_deepmd_energy_differences_equal_deeppot_forces(tmp_path):
    """Central differences of DeePMD-kit's energy (float64) on three atoms = deeppot's analytic forces."""
    section = model_section("alloy", type_one_side=False, activation="gelu")
    model = randomize_model(EnergyModel.from_config(section), 11)
    with torch.no_grad():  # larger forces, so rounding in the energy differences stays far below the tolerance
        for net in model.fitting.nets:
            net.layers[-1].matrix.mul_(100.0)
    save_model(model, tmp_path / "model.dp")
    coord, atype, box, _ = frames("alloy", 1)
    atoms, h = [0, 50, 107], 1e-4
    displaced = []
    for i in atoms:
        for a in range(3):
            for sign in (1.0, -1.0):
                c = coord[0].copy()
                c[i, a] += sign * h
                displaced.append(c)
    energy, _ = deepmd_energy(deepmd_load(tmp_path / "model.dp"), np.stack(displaced), atype,
                              np.repeat(box, len(displaced), axis=0))
    fd_force = -(energy[0::2] - energy[1::2]).reshape(len(atoms), 3) / (2 * h)
    force = deeppot_eval(model, coord, atype, box)["force"][0, atoms]
    print(f"finite-difference forces: max rel diff {rel_diff(force, fd_force):.2e}, max |F| {np.abs(force).max():.2e}")
    assert np.abs(fd_force).max() > 1e-2  # forces worth comparing
    assert rel_diff(force, fd_force) < 1e-6
