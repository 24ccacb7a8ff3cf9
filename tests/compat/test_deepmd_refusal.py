"""DeePMD-kit models that deeppot cannot compute exactly are refused with a message naming the feature."""

from __future__ import annotations

import copy
import re

import pytest
import torch

pytest.importorskip("deepmd.dpmodel")

from compat.deepmd_ref import deepmd_build, deepmd_save, wrapper_state_dict

from deeppot.io import load_model
from deeppot.io.deepmd_dict import UnsupportedModelError, model_from_dict

SMALL = {
    "type_map": ["O", "H"],
    "descriptor": {"type": "se_e2_a", "sel": [10, 20], "rcut": 4.0, "rcut_smth": 0.5, "neuron": [4, 8],
                   "axis_neuron": 4, "resnet_dt": False, "type_one_side": True, "seed": 1},
    "fitting_net": {"type": "ener", "neuron": [8, 8], "resnet_dt": True, "seed": 2},
}


def _section(**changes) -> dict:
    """SMALL with `part__key=value` changes (part: model, descriptor, fitting_net)."""
    section = copy.deepcopy(SMALL)
    for path, value in changes.items():
        part, key = path.split("__")
        (section if part == "model" else section[part])[key] = value
    return section


def _attention(kind: str) -> dict:
    section = copy.deepcopy(SMALL)
    section["descriptor"] = {"type": kind, "sel": 30, "rcut": 4.0, "rcut_smth": 0.5, "neuron": [4, 8],
                             "axis_neuron": 4, "attn_layer": 0, "seed": 1}
    return section


REFUSED_SECTIONS = {
    "se_atten": (_attention("se_atten"), "descriptor 'dpa1'"),  # DeePMD-kit serialises se_atten as dpa1
    "dpa1": (_attention("dpa1"), "descriptor 'dpa1'"),
    "fparam": (_section(fitting_net__numb_fparam=1), "fparam"),
    "aparam": (_section(fitting_net__numb_aparam=2), "aparam"),
    "atom_exclude_types": (_section(model__atom_exclude_types=[1]), "atom_exclude_types"),
    "pair_exclude_types": (_section(model__pair_exclude_types=[[0, 1]]), "pair_exclude_types"),
}


@pytest.mark.parametrize("case", list(REFUSED_SECTIONS))
def test_unsupported_deepmd_models_are_refused(case, tmp_path):
    section, feature = REFUSED_SECTIONS[case]
    deepmd_save(tmp_path / "model.dp", deepmd_build(section).serialize(), section)
    with pytest.raises(UnsupportedModelError, match=re.escape(feature)):
        load_model(tmp_path / "model.dp")


def test_compressed_descriptor_is_read_not_refused():
    """A DeePMD-kit model compressed by DeePMD-kit (descriptor @version 3) loads with its tables (tests/compress
    compares the results); only compressed PyTorch checkpoints stay refused (below)."""
    model = deepmd_build(SMALL)
    model.atomic_model.descriptor.enable_compression(0.8, 5, 0.05, 0.5)  # DeePMD-kit's own tables
    data = model.serialize()
    assert "compress" in data["descriptor"]
    assert model_from_dict(data).descriptor.compressed


@pytest.mark.parametrize("part", ["model", "descriptor", "fitting"])
def test_newer_versions_are_refused(part):
    data = deepmd_build(SMALL).serialize()
    model_from_dict(copy.deepcopy(data))  # the unchanged dict loads
    (data if part == "model" else data[part])["@version"] = 99
    with pytest.raises(UnsupportedModelError, match="@version 99"):
        model_from_dict(data)


# ---- DeePMD-kit PyTorch checkpoints (.pt) and TorchScript (.pth) ------------------------------------------------


def _checkpoint(tmp_path, section: dict, edit=None):
    sd = wrapper_state_dict({"model": deepmd_build(SMALL).serialize()}, section)
    if edit is not None:
        edit(sd)
    path = tmp_path / "model.ckpt.pt"
    torch.save({"model": sd}, path)
    return path


@pytest.mark.parametrize("case", ["se_atten", "fparam", "atom_exclude_types"])
def test_checkpoint_with_unsupported_model_params_is_refused(case, tmp_path):
    section, _ = REFUSED_SECTIONS[case]
    feature = "descriptor 'se_atten'" if case == "se_atten" else case
    with pytest.raises(UnsupportedModelError, match=re.escape(feature)):
        load_model(_checkpoint(tmp_path, section))


def test_checkpoint_with_unknown_tensor_is_refused(tmp_path):
    key = "model.Default.atomic_model.fitting_net.fparam_avg"
    path = _checkpoint(tmp_path, SMALL, lambda sd: sd.__setitem__(key, torch.zeros(1)))
    with pytest.raises(UnsupportedModelError, match=re.escape(key)):
        load_model(path)


def test_compressed_checkpoint_is_refused(tmp_path):
    key = "model.Default.atomic_model.descriptor.sea.compress_data.0"
    path = _checkpoint(tmp_path, SMALL, lambda sd: sd.__setitem__(key, torch.ones(10, 6)))
    with pytest.raises(UnsupportedModelError, match="compressed descriptor"):
        load_model(path)


def test_multi_task_checkpoint_is_refused(tmp_path):
    def add_branch(sd):
        for key in [k for k in sd if k.startswith("model.Default.")]:
            sd[key.replace("model.Default.", "model.water_2.")] = sd[key]

    with pytest.raises(UnsupportedModelError, match=r"multi-task checkpoint \(branches \['Default', 'water_2'\]\)"):
        load_model(_checkpoint(tmp_path, SMALL, add_branch))


def test_checkpoint_without_model_params_names_the_conversion(tmp_path):
    path = _checkpoint(tmp_path, SMALL, lambda sd: sd.pop("_extra_state"))
    with pytest.raises(ValueError, match=re.escape("dp convert-backend model.ckpt.pt model.dp")):
        load_model(path)


def test_checkpoint_whose_tensors_disagree_with_model_params(tmp_path):
    wider = _section(descriptor__neuron=[4, 16])
    with pytest.raises(ValueError, match="tensors do not match the model described by model_params"):
        load_model(_checkpoint(tmp_path, wider))


class _Payload:
    """Stands for arbitrary pickled objects: torch.load(weights_only=True) must refuse to build it."""


def test_checkpoint_with_pickled_objects_is_not_unpickled(tmp_path):
    path = tmp_path / "model.pt"
    torch.save({"model": {"model.Default.x": _Payload()}}, path)
    with pytest.raises(ValueError, match=r"cannot be read safely.*dp convert-backend model\.pt model\.dp"):
        load_model(path)


class _Tiny(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2.0


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit is deprecated; DeePMD-kit still uses it
@pytest.mark.parametrize("name", ["frozen_model.pth", "frozen_as.pt"])
def test_torchscript_is_refused_with_the_conversion_command(name, tmp_path):
    path = tmp_path / name
    torch.jit.save(torch.jit.script(_Tiny()), str(path))
    expected = f"{path} is a TorchScript model; convert it with `dp convert-backend {name} model.dp`"
    with pytest.raises(ValueError, match=re.escape(expected)):
        load_model(path)
