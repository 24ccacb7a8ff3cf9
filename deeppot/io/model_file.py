"""Load and save models: DeePMD-kit `.dp`/`.yaml` files and deeppot training checkpoints (`.pt`).

A frozen deeppot model *is* a DeePMD-kit `.dp` file (HDF5 + JSON, no pickled code), so `dp test -m model.dp`
and `dp convert-backend model.dp model.pth` work on it directly.
Checkpoints are `torch.save` dicts of tensors and plain values only, read back with `weights_only=True`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from deeppot.io.deepmd_dict import model_from_dict, model_to_dict
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
    """Load a frozen model (.dp/.yaml, ours or DeePMD-kit's) or a deeppot checkpoint (.pt)."""
    path = Path(path)
    if path.suffix in DP_SUFFIXES:
        data = load_dp(path)
        if "model" not in data:
            raise ValueError(f"{path}: no 'model' entry; not a serialized DeePMD-kit model")
        model = model_from_dict(data["model"])
        min_nbor_dist = (data.get("@variables") or {}).get("min_nbor_dist")
        if min_nbor_dist is not None:
            model.min_nbor_dist.fill_(float(np.asarray(min_nbor_dist)))
        if data.get("model_def_script"):
            model.config = data["model_def_script"]
        return model.to(device)
    if path.suffix == ".pt" or not path.suffix:
        return load_checkpoint_model(path if path.suffix else path.with_suffix(".pt")).to(device)
    raise ValueError(f"{path}: unknown model format {path.suffix!r}; deeppot reads .dp, .yaml and its own .pt "
                     "checkpoints (convert DeePMD-kit .pth/.pb files with `dp convert-backend IN model.dp`)")


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """Write a training checkpoint atomically (temporary file + rename)."""
    atomic_write(path, lambda tmp: torch.save(state, tmp))


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    state = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(state, dict) or "model" not in state or "config" not in state:
        raise ValueError(f"{path}: not a deeppot training checkpoint (DeePMD-kit checkpoints: convert with "
                         "`dp convert-backend {path.name} model.dp`)")
    return state


def load_checkpoint_model(path: str | Path) -> EnergyModel:
    state = read_checkpoint(path)
    model = EnergyModel.from_config(state["config"]["model"])
    model.load_state_dict(state["model"])
    return model
