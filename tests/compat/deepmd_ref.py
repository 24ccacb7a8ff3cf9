"""DeePMD-kit 3.2 as the reference: its NumPy backend (`deepmd.dpmodel`), the shared data sets, random statistics.

The oracle side never goes through deeppot code: frames are read with NumPy, models are loaded and evaluated by
DeePMD-kit, and the synthetic DeePMD-kit checkpoint is written from DeePMD-kit's own serialized weights.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from deeppot.model import EnergyModel

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"

# name -> (system folder under shared/data, sel); sel from the reference inputs in shared/bench/inputs
SYSTEMS = {
    "water": ("water/data_0", [46, 92]),
    "copper": ("copper/C44_strain_0.000", [96]),
    "alloy": ("alloy/train/sys.000", [80, 80, 80]),
}


def system_path(name: str) -> Path:
    path = SHARED_DATA / SYSTEMS[name][0]
    if not path.is_dir():
        pytest.skip(f"shared data set {path} is not available")
    return path


def frames(name: str, nframes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """The first frames of a shared system, read with NumPy: coord (nf, nloc, 3), atype (nloc,), box (nf, 3, 3)."""
    path = system_path(name)
    atype = np.loadtxt(path / "type.raw", dtype=np.int64).reshape(-1)
    type_map = (path / "type_map.raw").read_text().split()
    coord = np.load(path / "set.000" / "coord.npy")[:nframes].astype(np.float64).reshape(nframes, -1, 3)
    box = np.load(path / "set.000" / "box.npy")[:nframes].astype(np.float64).reshape(nframes, 3, 3)
    return coord, atype, box, type_map


def model_section(name: str, precision: str = "float64", type_one_side: bool = True, activation: str = "tanh",
                  resnet_dt: bool = True, exclude_types: list[list[int]] | None = None,
                  neuron: list[int] | None = None, env_protection: float = 0.0) -> dict[str, Any]:
    """A complete model section (every key explicit, so DeePMD-kit's and deeppot's defaults cannot differ)."""
    _, _, _, type_map = frames(name, 1)
    return {
        "type_map": type_map,
        "descriptor": {"type": "se_e2_a", "sel": list(SYSTEMS[name][1]), "rcut": 6.0, "rcut_smth": 2.0,
                       "neuron": neuron or [4, 8, 16], "axis_neuron": 4, "activation_function": activation,
                       "resnet_dt": resnet_dt, "type_one_side": type_one_side, "precision": precision,
                       "exclude_types": exclude_types or [], "env_protection": env_protection,
                       "set_davg_zero": False, "trainable": True, "seed": 1},
        "fitting_net": {"type": "ener", "neuron": [16, 16], "activation_function": activation,
                        "resnet_dt": resnet_dt, "precision": precision, "seed": 2},
    }


def random_stats(ntypes: int, sel: list[int], seed: int) -> dict[str, np.ndarray]:
    """Non-trivial davg/dstd and energy biases, in DeePMD-kit's shapes.

    davg/dstd are random per (centre type, neighbour-type block, component) and constant inside a block, as
    DeePMD-kit's statistics are: slots within a block hold neighbours sorted by distance, so per-slot values would
    make the energy depend on the order of equidistant neighbours (perfect crystals) and jump when two swap.
    """
    rng = np.random.default_rng(seed)

    def per_block(low: float, high: float) -> np.ndarray:
        return np.repeat(rng.uniform(low, high, (ntypes, len(sel), 4)), sel, axis=1)

    return {"davg": per_block(-0.2, 0.3), "dstd": per_block(0.5, 1.5),
            "bias_atom_e": rng.normal(size=(ntypes, 1)), "out_bias": rng.normal(size=(1, ntypes, 1))}


def randomize_model(model: EnergyModel, seed: int) -> EnergyModel:
    """Set random statistics on a deeppot model, so every normalisation and bias path matters."""
    d = model.descriptor
    stats = random_stats(d.ntypes, d.sel, seed)
    with torch.no_grad():
        d.davg.copy_(torch.as_tensor(stats["davg"]))
        d.dstd.copy_(torch.as_tensor(stats["dstd"]))
        model.fitting.bias_atom_e.copy_(torch.as_tensor(stats["bias_atom_e"]).reshape(-1))
        model.fitting.out_bias.copy_(torch.as_tensor(stats["out_bias"]).reshape(-1))
    return model


def randomize_model_dict(model_dict: dict[str, Any], seed: int) -> dict[str, Any]:
    """The same on DeePMD-kit's serialized model dict (the `model` entry of a .dp file)."""
    out = copy.deepcopy(model_dict)
    desc_vars, fit_vars = out["descriptor"]["@variables"], out["fitting"]["@variables"]
    stats = random_stats(desc_vars["davg"].shape[0], out["descriptor"]["sel"], seed)
    dtype = desc_vars["davg"].dtype
    desc_vars["davg"], desc_vars["dstd"] = stats["davg"].astype(dtype), stats["dstd"].astype(dtype)
    fit_vars["bias_atom_e"] = stats["bias_atom_e"].astype(fit_vars["bias_atom_e"].dtype)
    out["@variables"]["out_bias"] = stats["out_bias"]
    return out


def deepmd_build(section: dict[str, Any]):
    """A DeePMD-kit NumPy model with DeePMD-kit's own random initialisation."""
    from deepmd.dpmodel.model.model import get_model

    return get_model(copy.deepcopy(section))


def deepmd_save(path: Path, model_dict: dict[str, Any], section: dict[str, Any]) -> None:
    from deepmd.dpmodel.utils.serialization import save_dp_model

    save_dp_model(str(path), {"model": model_dict, "model_def_script": section})


def deepmd_load(path: Path):
    """A .dp/.yaml file as DeePMD-kit reads it."""
    from deepmd.dpmodel.model.base_model import BaseModel
    from deepmd.dpmodel.utils.serialization import load_dp_model

    return BaseModel.deserialize(load_dp_model(str(path))["model"])


def deepmd_energy(dp_model, coord: np.ndarray, atype: np.ndarray, box: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeePMD-kit's energy (nf,) and atom energies (nf, nloc) in float64."""
    nf = coord.shape[0]
    out = dp_model.call(coord.reshape(nf, -1), np.tile(atype, (nf, 1)), box.reshape(nf, 9))
    return (np.asarray(out["energy"], np.float64).reshape(nf),
            np.asarray(out["atom_energy"], np.float64).reshape(nf, -1))


def deeppot_eval(model: EnergyModel, coord: np.ndarray, atype: np.ndarray, box: np.ndarray) -> dict[str, np.ndarray]:
    out = model(torch.as_tensor(coord), torch.as_tensor(atype), torch.as_tensor(box))
    return {k: v.detach().numpy() for k, v in out.items()}


def rel_diff(ours: np.ndarray, ref: np.ndarray) -> float:
    """max |ours - ref| / max |ref|."""
    return float(np.max(np.abs(ours - ref)) / np.max(np.abs(ref)))


def wrapper_state_dict(data: dict[str, Any], model_params: dict[str, Any]) -> dict[str, Any]:
    """SYNTHETIC DeePMD-kit checkpoint (`torch.save({"model": this, ...})`) from a serialized se_e2_a model.

    DeePMD-kit's PyTorch backend does not import here, so this writes the ModelWrapper layout of spec §12.1 as
    observed in a real DeePMD-kit 3.2 checkpoint: `networks.k` and its alias `_networks.k`, empty compress_*
    tensors, out_std, min_nbor_dist and `_extra_state` with plain values.
    """
    model, desc, fit = data["model"], data["model"]["descriptor"], data["model"]["fitting"]
    sd: dict[str, Any] = {"_extra_state": {"model_params": model_params, "train_infos": {"lr": 0.001, "step": 0}}}

    def put(key: str, value: Any) -> None:
        sd["model.Default." + key] = torch.as_tensor(np.array(value))

    put("min_nbor_dist", np.float64((data.get("@variables") or {}).get("min_nbor_dist", -1.0)))
    put("atomic_model.out_bias", model["@variables"]["out_bias"])
    put("atomic_model.out_std", model["@variables"]["out_std"])
    put("atomic_model.descriptor.sea.mean", desc["@variables"]["davg"])
    put("atomic_model.descriptor.sea.stddev", desc["@variables"]["dstd"])
    for alias in ("networks", "_networks"):
        for k, net in enumerate(desc["embeddings"]["networks"]):
            _put_layers(put, f"atomic_model.descriptor.sea.filter_layers.{alias}.{k}", net)
    for kind in ("info", "data"):
        for k in range(len(desc["embeddings"]["networks"])):
            put(f"atomic_model.descriptor.sea.compress_{kind}.{k}", np.zeros(0, desc["@variables"]["davg"].dtype))
    put("atomic_model.fitting_net.bias_atom_e", fit["@variables"]["bias_atom_e"])
    for alias in ("networks", "_networks"):
        for t, net in enumerate(fit["nets"]["networks"]):
            _put_layers(put, f"atomic_model.fitting_net.filter_layers.{alias}.{t}", net)
    return sd


def _put_layers(put, prefix: str, net: dict[str, Any]) -> None:
    for index, layer in enumerate(net["layers"]):
        v = layer["@variables"]
        put(f"{prefix}.layers.{index}.matrix", v["w"])
        put(f"{prefix}.layers.{index}.bias", v["b"])
        if v.get("idt") is not None:
            put(f"{prefix}.layers.{index}.idt", v["idt"])
