"""Load and save models: DeePMD-kit `.dp`/`.yaml` files and deeppot training checkpoints (`.pt`).

A frozen deeppot model *is* a DeePMD-kit `.dp` file (HDF5 + JSON, no pickled code), so `dp test -m model.dp`
and `dp convert-backend model.dp model.pth` work on it directly.
Checkpoints are `torch.save` dicts of tensors and plain values only, read back with `weights_only=True`; a `.pt`
file is ours if it has "model" and "config" keys and DeePMD-kit's if its tensors start with `model.Default.`.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import torch

from deeppot.io.deepmd_dict import model_from_dict, model_to_dict
from deeppot.io.deepmd_pt import deepmd_state_dict, model_from_state_dict, read_torch_file
from deeppot.io.dp_file import atomic_write, load_dp, save_dp
from deeppot.model import EnergyModel

DP_SUFFIXES = (".dp", ".yaml", ".yml")


def model_to_file_dict(model: EnergyModel) -> dict[str, Any]:
    """The top-level dict of a .dp file for this model."""
    data: dict[str, Any] = {"model": model_to_dict(model),
                            "model_def_script": model.config or {},
                            "@variables": {"min_nbor_dist": np.float64(model.min_nbor_dist.item())}}
    return data


def save_model(model: EnergyModel, path: str | Path) -> None:
    """Write a frozen model: DeePMD-kit's .dp (HDF5) or .yaml serialisation."""
    if not str(path).endswith(DP_SUFFIXES):
        raise ValueError(f"{path}: frozen models are written as DeePMD-kit .dp (or .yaml) files; "
                         "use a .dp suffix (DeePMD-kit turns it into .pth with `dp convert-backend`)")
    save_dp(path, model_to_file_dict(model))


def load_model(path: str | Path, device: str | torch.device = "cpu") -> EnergyModel:
    """Load a model: .dp/.yaml (ours or DeePMD-kit's), a deeppot checkpoint or a DeePMD-kit checkpoint (.pt).

    DeePMD-kit's TorchScript .pth files are refused (they would run code): convert them to .dp first.
    """
    path = Path(path)
    if path.suffix in DP_SUFFIXES:
        return load_dp_model(path).to(device)
    if path.suffix in (".pt", ".pth") or not path.suffix:
        return load_torch_model(path if path.suffix else path.with_suffix(".pt")).to(device)
    raise ValueError(f"{path}: unknown model format {path.suffix!r}; deeppot reads .dp, .yaml and .pt checkpoints "
                     "(its own and DeePMD-kit's; convert other DeePMD-kit files with `dp convert-backend IN model.dp`)")


def cast_model(model: EnergyModel, precision: str) -> EnergyModel:
    """The same model in another precision ("float32" or "float64"): weights, statistics and compression tables
    rounded to it, built the way a .dp file is read (so nothing the format carries is lost)."""
    if precision not in ("float32", "float64"):
        raise ValueError(f"precision {precision!r}: use float32 or float64")
    data = model_to_dict(model)
    for part in ("descriptor", "fitting"):
        data[part]["precision"] = precision
    cast = model_from_dict(data)
    cast.min_nbor_dist.copy_(model.min_nbor_dist)
    if model.config is not None:
        cast.config = copy.deepcopy(model.config)
        for part in ("descriptor", "fitting_net"):
            cast.config.setdefault(part, {})["precision"] = precision
    return cast.to(model.min_nbor_dist.device)


def load_dp_model(path: str | Path) -> EnergyModel:
    """A model from a .dp/.yaml serialized-model file."""
    data = load_dp(path)
    if "model" not in data:
        raise ValueError(f"{path}: no 'model' entry; not a serialized DeePMD-kit model")
    model = model_from_dict(data["model"])
    min_nbor_dist = (data.get("@variables") or {}).get("min_nbor_dist")
    if min_nbor_dist is not None:
        model.min_nbor_dist.fill_(float(np.asarray(min_nbor_dist)))
    if data.get("model_def_script"):
        model.config = data["model_def_script"]
    return model


def load_torch_model(path: str | Path) -> EnergyModel:
    """A model from a torch.save file: a deeppot checkpoint ("model", "config") or DeePMD-kit's ("model.Default.")."""
    state = read_torch_file(path)
    if _is_deeppot_checkpoint(state):
        return _checkpoint_model(state)
    deepmd_sd = deepmd_state_dict(state)
    if deepmd_sd is not None:
        return model_from_state_dict(deepmd_sd, str(path))
    raise ValueError(f"{path}: neither a deeppot nor a DeePMD-kit PyTorch checkpoint")


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """Write a training checkpoint atomically (temporary file + rename)."""
    atomic_write(path, lambda tmp: torch.save(state, tmp))


def _is_deeppot_checkpoint(state: Any) -> bool:
    return isinstance(state, dict) and "model" in state and "config" in state


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """A deeppot training checkpoint (for --restart and freeze)."""
    path = Path(path)
    state = read_torch_file(path)
    if not _is_deeppot_checkpoint(state):
        what = "a DeePMD-kit checkpoint" if deepmd_state_dict(state) is not None else "not a deeppot checkpoint"
        raise ValueError(f"{path}: {what}; deeppot restarts from its own checkpoints only "
                         "(start from a DeePMD-kit model with --init-model instead)")
    return state


def load_checkpoint_model(path: str | Path) -> EnergyModel:
    return _checkpoint_model(read_checkpoint(path))


def _checkpoint_model(state: dict[str, Any]) -> EnergyModel:
    model = EnergyModel.from_config(state["config"]["model"])
    model.load_state_dict(state["model"])
    return model
