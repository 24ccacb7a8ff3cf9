"""DeePMD-kit 3.2 PyTorch model files: training checkpoints (`.pt`) and frozen TorchScript (`.pth`), spec §12.1-12.2.

A `.pt` checkpoint is `torch.save({"model": state_dict, "optimizer": ...})` of DeePMD-kit's `ModelWrapper`: tensors
under `model.Default.` plus `_extra_state = {"model_params": <model section>, "train_infos": {...}}` (plain values),
so `torch.load(weights_only=True)` reads it without running pickled code. The tensors map one to one onto
EnergyModel's parameters and buffers; the model is built from `model_params`.

A `.pth` file is TorchScript: loading it compiles and runs its code, so deeppot refuses it and names the
DeePMD-kit command that turns it into a `.dp` file.
"""

from __future__ import annotations

import pickle
import re
import zipfile
from pathlib import Path
from typing import Any

import torch

from deeppot.config.model import DESCRIPTOR_KEYS, FITTING_KEYS, normalize_model
from deeppot.io.deepmd_dict import UnsupportedModelError
from deeppot.model import EnergyModel

PREFIX = "model.Default."
_DESC = "atomic_model.descriptor.sea."
_FIT = "atomic_model.fitting_net."

# DeePMD-kit key (after PREFIX) -> deeppot state-dict key, for the whole-tensor entries
_RENAMES = {
    "min_nbor_dist": "min_nbor_dist",
    f"{_DESC}mean": "descriptor.davg",
    f"{_DESC}stddev": "descriptor.dstd",
    f"{_FIT}bias_atom_e": "fitting.bias_atom_e",  # (ntypes, 1) -> (ntypes,)
    "atomic_model.out_bias": "fitting.out_bias",  # (1, ntypes, 1) -> (ntypes,)
}
_NETWORKS = {f"{_DESC}filter_layers.networks.": "descriptor.nets.", f"{_FIT}filter_layers.networks.": "fitting.nets."}
# Present in every checkpoint and not needed: `_networks` aliases the same tensors as `networks`; out_std is not
# applied to energies; compress_* are empty tensors unless the descriptor is compressed (checked separately).
_IGNORED = re.compile(r"atomic_model\.(out_std|descriptor\.sea\.filter_layers\._networks\..*"
                      r"|fitting_net\.filter_layers\._networks\..*|descriptor\.sea\.compress_(info|data)\.\d+)")


def convert_hint(path: str | Path) -> str:
    return f"convert it with `dp convert-backend {Path(path).name} model.dp` and load the .dp file"


def is_torchscript(path: str | Path) -> bool:
    """A TorchScript archive holds compiled code (`<name>/code/...`); a torch.save archive holds none."""
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as archive:
        return any("/code/" in name for name in archive.namelist())


def refuse_torchscript(path: str | Path) -> None:
    raise ValueError(f"{path} is a TorchScript model; convert it with `dp convert-backend {Path(path).name} "
                     "model.dp` (deeppot does not execute TorchScript files)")


def read_torch_file(path: str | Path) -> Any:
    """torch.load with weights_only=True: tensors and plain values only, never pickled code."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"model file not found: {path}")
    if is_torchscript(path):
        refuse_torchscript(path)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        first = str(err).splitlines()[0]
        raise ValueError(f"{path}: holds objects that cannot be read safely ({first}); {convert_hint(path)}") from None


def deepmd_state_dict(state: Any) -> dict[str, Any] | None:
    """The wrapper state dict if `state` (a torch.load result) is a DeePMD-kit checkpoint, else None.

    DeePMD-kit writes {"model": state_dict, "optimizer": ...}; older files are the bare state dict.
    """
    if not isinstance(state, dict):
        return None
    inner = state.get("model", state)
    if isinstance(inner, dict) and any(isinstance(k, str) and k.startswith("model.") for k in inner):
        return inner
    return None


def load_deepmd_checkpoint(path: str | Path) -> EnergyModel:
    """Read a DeePMD-kit PyTorch training checkpoint (`.pt`) into an EnergyModel."""
    sd = deepmd_state_dict(read_torch_file(path))
    if sd is None:
        raise ValueError(f"{path}: not a DeePMD-kit PyTorch checkpoint (no 'model.Default.' tensors)")
    return model_from_state_dict(sd, str(path))


def model_from_state_dict(sd: dict[str, Any], source: str = "checkpoint") -> EnergyModel:
    """EnergyModel from DeePMD-kit's ModelWrapper state dict (spec §12.1); refuse what deeppot cannot compute."""
    params = _model_params(sd, source)
    check_features(params)
    model = EnergyModel.from_config(_deeppot_section(params))
    try:
        model.load_state_dict(map_state_dict(sd, model))
    except RuntimeError as err:  # missing tensors or shapes that disagree with model_params
        raise ValueError(f"{source}: tensors do not match the model described by model_params "
                         f"({str(err).splitlines()[-1].strip()})") from None
    model.config = params  # keeps DeePMD-kit's model section as the .dp model_def_script
    return model


def _model_params(sd: dict[str, Any], source: str) -> dict[str, Any]:
    extra = sd.get("_extra_state")
    if not isinstance(extra, dict) or not isinstance(extra.get("model_params"), dict):
        raise ValueError(f"{source}: no _extra_state.model_params in the checkpoint; {convert_hint(source)}")
    branches = sorted({k.split(".")[1] for k in sd if k.startswith("model.")})
    if "model_dict" in extra["model_params"] or branches != ["Default"]:
        raise UnsupportedModelError(f"{source}: a multi-task checkpoint (branches {branches}); deeppot reads "
                                    "single-task models (freeze one head with `dp --pt freeze --head NAME`)")
    return extra["model_params"]


def check_features(params: dict[str, Any]) -> None:
    """Refuse model sections deeppot cannot reproduce exactly; the message names the feature."""
    desc, fit = params.get("descriptor", {}), params.get("fitting_net", {})
    checks = [
        (params.get("type", "standard") == "standard", f"model type {params.get('type')!r}"),
        (desc.get("type") in ("se_e2_a", "se_a"), f"descriptor {desc.get('type')!r}"),
        (fit.get("type", "ener") == "ener", f"fitting {fit.get('type')!r}"),
        (not fit.get("numb_fparam"), "frame parameters (fparam)"),
        (not fit.get("numb_aparam"), "atomic parameters (aparam)"),
        (not fit.get("dim_case_embd"), "case embedding (dim_case_embd)"),
        (not any(v is not None for v in fit.get("atom_ener") or []), "fitting atom_ener"),
        (not params.get("atom_exclude_types") and not params.get("pair_exclude_types"),
         "atom_exclude_types/pair_exclude_types"),
        (not params.get("spin") and not params.get("use_srtab"), "spin or a pair table (use_srtab)"),
    ]
    for ok, what in checks:
        if not ok:
            raise UnsupportedModelError(f"this DeePMD-kit model uses {what}, which deeppot does not support")


def _known(keys: tuple) -> set[str]:
    return {name for key in keys for name in (key.name, *key.aliases)}


def _deeppot_section(params: dict[str, Any]) -> dict[str, Any]:
    """The model section with only the keys that shape the network (DeePMD-kit adds bookkeeping keys)."""
    desc_keys, fit_keys = _known(DESCRIPTOR_KEYS), _known(FITTING_KEYS)
    section = {"type_map": list(params["type_map"]),
               "descriptor": {k: v for k, v in params["descriptor"].items() if k in desc_keys},
               "fitting_net": {k: v for k, v in params["fitting_net"].items() if k in fit_keys}}
    section["fitting_net"].pop("atom_ener", None)  # checked above; `[]` and `[None, ...]` mean "none"
    return normalize_model(section)


def _rename(key: str) -> str | None:
    """deeppot key for a DeePMD-kit key (without PREFIX); None for keys deeppot ignores."""
    if key in _RENAMES:
        return _RENAMES[key]
    for theirs, ours in _NETWORKS.items():
        if key.startswith(theirs):  # network index k: same flat storage order (spec §4.3) on both sides
            return ours + key[len(theirs):]
    if _IGNORED.fullmatch(key):
        return None
    raise UnsupportedModelError(f"checkpoint tensor {PREFIX}{key} belongs to a feature deeppot does not support")


def map_state_dict(sd: dict[str, Any], model: EnergyModel) -> dict[str, torch.Tensor]:
    """DeePMD-kit wrapper tensors -> a complete state dict for `model` (dtypes converted by load_state_dict)."""
    if any(v.numel() for k, v in sd.items() if k.startswith(f"{PREFIX}{_DESC}compress_data.")):
        raise UnsupportedModelError("this DeePMD-kit model uses a compressed descriptor, which deeppot does not "
                                    "support (use the checkpoint from before `dp compress`)")
    ours = model.state_dict()
    # exclusion table: from model_params; min_nbor_dist: absent from older checkpoints (-1 = unknown)
    mapped = {key: ours[key] for key in ("descriptor.excluded", "min_nbor_dist")}
    for key, value in sd.items():
        if not key.startswith(PREFIX):
            continue
        name = _rename(key[len(PREFIX):])
        if name is None:
            continue
        if name in ("fitting.bias_atom_e", "fitting.out_bias"):
            value = _per_type(value, ours[name].numel(), key)
        mapped[name] = value
    return _stack_networks(mapped, ours)


_NET_KEY = re.compile(r"(descriptor|fitting)\.nets\.(\d+)\.layers\.(\d+)\.(matrix|bias|idt)")


def _stack_networks(mapped: dict[str, Any], ours: dict[str, torch.Tensor]) -> dict[str, Any]:
    """Per-net tensors (DeePMD-kit: one module per net) -> deeppot's stacked (nnets, ...) parameters."""
    out = {k: v for k, v in mapped.items() if not _NET_KEY.fullmatch(k)}
    filled: dict[str, set[int]] = {}
    for key, value in mapped.items():
        m = _NET_KEY.fullmatch(key)
        if m is None:
            continue
        part, k, layer, name = m.group(1), int(m.group(2)), m.group(3), m.group(4)
        target = f"{part}.nets.layers.{layer}.{name}"
        if target not in ours or k >= ours[target].shape[0]:  # RuntimeError: reported as a model_params mismatch
            raise RuntimeError(f"{key}: no such network parameter in the model")
        stacked = out.setdefault(target, ours[target].clone())
        if value.numel() != stacked[k].numel():
            raise RuntimeError(f"{key}: {tuple(value.shape)} does not match {tuple(stacked[k].shape)}")
        stacked[k] = value.reshape(stacked[k].shape)
        filled.setdefault(target, set()).add(k)
    for target, nets in filled.items():
        if len(nets) != ours[target].shape[0]:
            raise RuntimeError(f"the checkpoint lacks some networks of {target}")
    return out


def _per_type(value: torch.Tensor, ntypes: int, key: str) -> torch.Tensor:
    if value.numel() != ntypes:
        raise ValueError(f"{key}: {tuple(value.shape)} is not one energy value per type ({ntypes} types)")
    return value.reshape(ntypes)
