"""DeePMD-kit PyTorch training checkpoints (.pt) read by deeppot, and `convert` to .dp/.yaml.

DeePMD-kit's PyTorch backend does not import in this environment (its custom-op loader needs the `mpich` wheel
and a matching torch build), so the checkpoints here are SYNTHETIC: the ModelWrapper state-dict layout of a real
DeePMD-kit 3.2 checkpoint (see compat.deepmd_ref.wrapper_state_dict), filled with the weights of a model that
DeePMD-kit's NumPy backend built, with `model_params` normalised by DeePMD-kit's own argcheck.
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
    wrapper_state_dict,
)

from deeppot.io import load_model, save_model
from deeppot.io.convert import convert
from deeppot.io.deepmd_dict import UnsupportedModelError
from deeppot.io.model_file import read_checkpoint, save_checkpoint
from deeppot.model import EnergyModel

CASES = {
    "water-two_side-f64": ("water", {"type_one_side": False, "activation": "gelu"}),
    "copper-f32": ("copper", {"precision": "float32", "resnet_dt": False}),
    "alloy-one_side-f64-exclude": ("alloy", {"exclude_types": [[1, 2]]}),
}
TOL = {"float64": 1e-10, "float32": 1e-5}


def deepmd_normalized(section: dict) -> dict:
    """The model section as DeePMD-kit stores it in `_extra_state.model_params` (defaults and bookkeeping keys)."""
    from deepmd.utils.argcheck import normalize

    config = {"model": section, "learning_rate": {"start_lr": 1e-3}, "loss": {},
              "training": {"training_data": {"systems": ["unused"]}, "numb_steps": 1}}
    return normalize(config, multi_task=False)["model"]


def write_deepmd_checkpoint(path, case: str, bare: bool = False):
    """A DeePMD-kit-style checkpoint; returns the DeePMD-kit NumPy model holding the same weights."""
    name, options = CASES[case]
    section = model_section(name, **options)
    model_dict = randomize_model_dict(deepmd_build(section).serialize(), zlib.crc32(case.encode()))
    sd = wrapper_state_dict({"model": model_dict, "@variables": {"min_nbor_dist": 0.97}},
                            deepmd_normalized(section))
    optimizer = torch.optim.Adam([torch.zeros(3, requires_grad=True)], lr=1e-3).state_dict()
    torch.save(sd if bare else {"model": sd, "optimizer": optimizer}, path)
    from deepmd.dpmodel.model.base_model import BaseModel

    return BaseModel.deserialize(model_dict)


@pytest.mark.parametrize("case", list(CASES))
def test_deepmd_checkpoint_gives_deepmd_energies(case, tmp_path):
    name, options = CASES[case]
    reference = write_deepmd_checkpoint(tmp_path / "model.ckpt.pt", case)
    model = load_model(tmp_path / "model.ckpt.pt")
    coord, atype, box, _ = frames(name, 2)
    ref = deepmd_energy(reference, coord, atype, box)
    ours = deeppot_eval(model, coord, atype, box)
    tol = TOL[options.get("precision", "float64")]
    print(f"{case}: max rel diff energy {rel_diff(ours['energy'], ref[0]):.2e}, "
          f"atom energy {rel_diff(ours['atom_energy'], ref[1]):.2e}")
    assert rel_diff(ours["energy"], ref[0]) < tol
    assert rel_diff(ours["atom_energy"], ref[1]) < tol
    assert model.min_nbor_dist.item() == pytest.approx(0.97)
    assert model.config["descriptor"]["type"] == "se_e2_a"  # DeePMD-kit's model section kept for model_def_script


def test_bare_state_dict_checkpoint_is_read(tmp_path):
    """Older DeePMD-kit files hold the state dict itself, without the {"model": ...} wrapper."""
    reference = write_deepmd_checkpoint(tmp_path / "old.pt", "copper-f32", bare=True)
    coord, atype, box, _ = frames("copper", 1)
    ours = deeppot_eval(load_model(tmp_path / "old.pt"), coord, atype, box)
    assert rel_diff(ours["energy"], deepmd_energy(reference, coord, atype, box)[0]) < 1e-5


def test_deeppot_checkpoint_still_loads_and_restart_refuses_deepmd_checkpoints(tmp_path):
    section = model_section("copper")
    model = randomize_model(EnergyModel.from_config(section), 3)
    save_checkpoint(tmp_path / "ours.pt", {"model": model.state_dict(), "config": {"model": section}})
    loaded = load_model(tmp_path / "ours.pt")
    for key, value in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[key], value), key
    write_deepmd_checkpoint(tmp_path / "theirs.pt", "copper-f32")
    with pytest.raises(ValueError, match="a DeePMD-kit checkpoint"):
        read_checkpoint(tmp_path / "theirs.pt")


@pytest.mark.parametrize("suffix", [".dp", ".yaml"])
def test_convert_deepmd_checkpoint_for_deepmd(suffix, tmp_path):
    """DeePMD-kit .pt -> convert -> a file DeePMD-kit reads, with the same weights: DeePMD-kit's energies equal."""
    reference = write_deepmd_checkpoint(tmp_path / "model.ckpt.pt", "copper-f32")
    out = tmp_path / f"model{suffix}"
    convert(tmp_path / "model.ckpt.pt", out)
    coord, atype, box, _ = frames("copper", 1)
    ref = deepmd_energy(reference, coord, atype, box)
    converted = deepmd_energy(deepmd_load(out), coord, atype, box)
    assert rel_diff(converted[0], ref[0]) < 1e-12
    assert rel_diff(converted[1], ref[1]) < 1e-12
    from deepmd.dpmodel.utils.serialization import load_dp_model

    data = load_dp_model(str(out))
    assert float(np.asarray(data["@variables"]["min_nbor_dist"])) == pytest.approx(0.97)
    assert data["model_def_script"]["descriptor"]["sel"] == [96]


def test_convert_between_dp_and_yaml_and_from_our_checkpoint(tmp_path):
    section = model_section("copper", activation="gelu")
    model = randomize_model(EnergyModel.from_config(section), 4)
    save_checkpoint(tmp_path / "ours.pt", {"model": model.state_dict(), "config": {"model": section}})
    convert(tmp_path / "ours.pt", tmp_path / "a.dp")
    convert(tmp_path / "a.dp", tmp_path / "b.yaml")
    convert(tmp_path / "b.yaml", tmp_path / "c.dp")
    coord, atype, box, _ = frames("copper", 1)
    ours = deeppot_eval(model, coord, atype, box)
    for name in ("a.dp", "b.yaml", "c.dp"):
        assert rel_diff(ours["energy"], deepmd_energy(deepmd_load(tmp_path / name), coord, atype, box)[0]) < 1e-12


def test_convert_refuses_other_outputs_and_writes_nothing_for_unsupported_models(tmp_path):
    model = randomize_model(EnergyModel.from_config(model_section("copper")), 5)
    save_model(model, tmp_path / "model.dp")
    with pytest.raises(ValueError, match=r"must be a \.dp or \.yaml file"):
        convert(tmp_path / "model.dp", tmp_path / "model.pth")
    assert not (tmp_path / "model.pth").exists()
    section = model_section("copper")
    section["fitting_net"]["numb_fparam"] = 1
    deepmd_save(tmp_path / "fparam.dp", deepmd_build(section).serialize(), section)
    with pytest.raises(UnsupportedModelError, match="fparam"):
        convert(tmp_path / "fparam.dp", tmp_path / "out.dp")
    assert not (tmp_path / "out.dp").exists()
