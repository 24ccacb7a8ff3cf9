"""DeePMD-kit's backend-independent model dict (spec §12.3) <-> EnergyModel.

Every component is a versioned dict (`@class`, `@version`, `@variables`); arrays are NumPy. This is the one
contract for both import and export; `.dp` and `.yaml` files are encodings of it (deeppot.io.dp_file).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from deeppot.model.descriptor import DescrptSeA
from deeppot.model.energy_model import EnergyModel
from deeppot.model.fitting import EnergyFitting
from deeppot.model.network import NetView
from deeppot.model.tabulate import CompressedTables

_DTYPE_NAMES = {torch.float64: "float64", torch.float32: "float32"}
_NAME_DTYPES = {"float64": torch.float64, "float32": torch.float32, "default": torch.float64}


class UnsupportedModelError(ValueError):
    """A DeePMD-kit model uses a feature deeppot does not implement; the message names it."""


def _np(t: torch.Tensor | None) -> np.ndarray | None:
    return None if t is None else t.detach().cpu().numpy().copy()


def _layer_dict(layer, precision: str) -> dict[str, Any]:
    return {"@class": "Layer", "@version": 2, "bias": True, "use_timestep": layer.idt is not None,
            "activation_function": layer.activation_function, "resnet": layer.resnet, "precision": precision,
            "trainable": True,
            "@variables": {"w": _np(layer.matrix), "b": _np(layer.bias), "idt": _np(layer.idt)}}


def _net_dict(net: NetView, fitting: bool) -> dict[str, Any]:
    precision = _DTYPE_NAMES[net.dtype]
    layers = [_layer_dict(layer, precision) for layer in net.layers]
    common = {"neuron": list(net.neuron), "activation_function": net.activation_function,
              "resnet_dt": net.resnet_dt, "precision": precision, "layers": layers}
    if fitting:
        return {"@class": "FittingNetwork", "@version": 1, "in_dim": net.in_dim, "out_dim": net.out_dim,
                **common, "bias_out": True}
    return {"@class": "EmbeddingNetwork", "@version": 2, "in_dim": 1, **common, "bias": True}


def _collection(nets, ndim: int, ntypes: int, kind: str) -> dict[str, Any]:
    return {"@class": "NetworkCollection", "@version": 1, "ndim": ndim, "ntypes": ntypes,
            "network_type": kind, "networks": [_net_dict(n, kind == "fitting_network") for n in nets]}


def descriptor_to_dict(d: DescrptSeA, type_map: list[str]) -> dict[str, Any]:
    """Version 2, or 3 with a `compress` entry (the tables) when compressed, as DeePMD-kit 3.2 writes it."""
    out = _descriptor_v2(d, type_map)
    if d.tables is not None:
        tables = d.tables
        out["@version"] = 3
        out["compress"] = {"@variables": {
            "compress_data": [_np(tables.data(k)) for k in range(tables.nnets)],
            "compress_info": [_np(tables.info(k)) for k in range(tables.nnets)]}}
    return out


def _descriptor_v2(d: DescrptSeA, type_map: list[str]) -> dict[str, Any]:
    return {"@class": "Descriptor", "type": "se_e2_a", "@version": 2, "rcut": d.rcut, "rcut_smth": d.rcut_smth,
            "sel": list(d.sel), "neuron": list(d.neuron), "axis_neuron": d.axis_neuron, "resnet_dt": d.resnet_dt,
            "trainable": True, "type_one_side": d.type_one_side, "exclude_types": [list(p) for p in d.exclude_types],
            "env_protection": d.env_protection, "set_davg_zero": d.set_davg_zero,
            "activation_function": d.activation_function, "precision": _DTYPE_NAMES[d.dtype], "spin": None,
            "type_map": list(type_map),
            "env_mat": {"rcut": d.rcut, "rcut_smth": d.rcut_smth, "protection": d.env_protection,
                        "use_exp_switch": False},
            "embeddings": _collection(d.nets, 1 if d.type_one_side else 2, d.ntypes, "embedding_network"),
            "@variables": {"davg": _np(d.davg), "dstd": _np(d.dstd)}}


def fitting_to_dict(f: EnergyFitting, type_map: list[str]) -> dict[str, Any]:
    return {"@class": "Fitting", "@version": 4, "type": "ener", "var_name": "energy", "dim_out": 1,
            "ntypes": f.ntypes, "dim_descrpt": f.dim_descrpt, "neuron": list(f.neuron), "resnet_dt": f.resnet_dt,
            "numb_fparam": 0, "numb_aparam": 0, "dim_case_embd": 0, "default_fparam": None,
            "activation_function": f.activation_function, "precision": _DTYPE_NAMES[f.dtype],
            "mixed_types": False, "rcond": None, "exclude_types": [], "type_map": list(type_map),
            "atom_ener": None, "tot_ener_zero": False, "trainable": [True] * (len(f.neuron) + 1),
            "layer_name": None, "use_aparam_as_mask": False, "spin": None,
            "nets": _collection(f.nets, 1, f.ntypes, "fitting_network"),
            "@variables": {"bias_atom_e": _np(f.bias_atom_e)[:, None], "case_embd": None, "fparam_avg": None,
                           "fparam_inv_std": None, "aparam_avg": None, "aparam_inv_std": None}}


def model_to_dict(model: EnergyModel) -> dict[str, Any]:
    """The atomic-model dict DeePMD-kit 3.2 deserialises (`model` key of a .dp file)."""
    ntypes = len(model.type_map)
    out_bias = _np(model.fitting.out_bias).reshape(1, ntypes, 1)
    out_std = np.ones((1, ntypes, 1))
    return {"@class": "Model", "@version": 2, "type": "standard", "type_map": list(model.type_map),
            "atom_exclude_types": [], "pair_exclude_types": [], "rcond": None, "preset_out_bias": None,
            "@variables": {"out_bias": out_bias, "out_std": out_std},
            "descriptor": descriptor_to_dict(model.descriptor, model.type_map),
            "fitting": fitting_to_dict(model.fitting, model.type_map)}


# ---- import ------------------------------------------------------------------------------------------------


def _require(cond: bool, what: str) -> None:
    if not cond:
        raise UnsupportedModelError(f"this DeePMD-kit model uses {what}, which deeppot does not support")


def _check_version(d: dict[str, Any], cls: str, max_version: int) -> None:
    _require(d.get("@class") == cls, f"a {d.get('@class')!r} component where {cls!r} was expected")
    version = d.get("@version", 1)
    if version > max_version:
        raise UnsupportedModelError(f"{cls} @version {version} is newer than deeppot reads ({max_version})")


def _load_net(net: NetView, data: dict[str, Any]) -> None:
    _require(len(data["layers"]) == len(net.layers), "a network layout that differs from its own description")
    for layer, ld in zip(net.layers, data["layers"], strict=True):
        v = ld["@variables"]
        _require((v.get("idt") is None) == (layer.idt is None), "timestep (idt) on a layer without skip")
        _copy_checked(layer.matrix, v["w"], "layer matrix")
        _copy_checked(layer.bias, np.reshape(v["b"], -1), "layer bias")
        if layer.idt is not None:
            _copy_checked(layer.idt, np.reshape(v["idt"], -1), "layer idt")


def _copy_checked(target: torch.Tensor, value: Any, what: str) -> None:
    """Copy an array into a parameter/buffer; shapes must match exactly (copy_ alone would broadcast)."""
    array = torch.as_tensor(np.asarray(value))
    if array.shape != target.shape:
        raise ValueError(f"{what}: shape {tuple(array.shape)} does not match the model's {tuple(target.shape)}")
    with torch.no_grad():
        target.copy_(array)


def model_from_dict(data: dict[str, Any]) -> EnergyModel:
    """Build an EnergyModel from DeePMD-kit's model dict; refuse anything deeppot cannot compute exactly."""
    _check_version(data, "Model", 2)
    _require(data.get("type", "standard") == "standard", f"model type {data.get('type')!r}")
    _require(not data.get("atom_exclude_types") and not data.get("pair_exclude_types"),
             "atom_exclude_types/pair_exclude_types")
    desc, fit = data["descriptor"], data["fitting"]
    # features first: another descriptor or a compressed one also carries a higher @version, and the
    # message should name the feature rather than the version
    _require(desc.get("type") in ("se_e2_a", "se_a"), f"descriptor {desc.get('type')!r}")
    _check_version(desc, "Descriptor", 3)  # 3: with the compression tables
    _require(not desc.get("spin") and not desc["env_mat"].get("use_exp_switch", False), "spin/exp switch")
    _check_version(fit, "Fitting", 4)
    _require(fit.get("type") == "ener", f"fitting {fit.get('type')!r}")
    _require(not fit.get("numb_fparam") and not fit.get("numb_aparam") and not fit.get("dim_case_embd"),
             "frame/atomic parameters (fparam/aparam) or case embedding")
    _require(not fit.get("atom_ener") or all(v is None for v in fit["atom_ener"]), "fitting atom_ener")
    _require(not fit.get("mixed_types"), "a mixed-types fitting")
    _require(not fit.get("exclude_types"), "fitting exclude_types (atom exclusion)")
    model = EnergyModel.from_config(model_def_script(data))
    _load_weights(model, data)
    return model


def _load_tables(d: DescrptSeA, variables: dict[str, Any]) -> None:
    """The compression tables of a version-3 descriptor: one (data, info) per embedding net, empty if untabulated."""
    data, info = variables["compress_data"], variables["compress_info"]
    _require(len(data) == len(d.nets) and len(info) == len(d.nets), "compression tables that do not match its nets")
    m1 = d.neuron[-1]
    tensors, infos = [], []
    for table, values in zip(data, info, strict=True):
        table = torch.as_tensor(np.asarray(table), dtype=d.dtype)
        values = torch.as_tensor(np.asarray(values), dtype=d.dtype).reshape(-1)
        if table.numel() and (table.dim() != 2 or table.shape[1] != 6 * m1 or values.numel() != 6):
            raise ValueError(f"compress_data {tuple(table.shape)} / compress_info {tuple(values.shape)}: expected "
                             f"(nspline, {6 * m1}) and (6,)")
        tensors.append(table)
        infos.append(values)
    d.tables = CompressedTables(tensors, infos)


def model_def_script(data: dict[str, Any]) -> dict[str, Any]:
    """The input.json `model` section equivalent to a model dict."""
    desc, fit = data["descriptor"], data["fitting"]
    keys = ("sel", "rcut", "rcut_smth", "neuron", "axis_neuron", "activation_function", "resnet_dt",
            "type_one_side", "exclude_types", "env_protection", "set_davg_zero", "precision")
    fkeys = ("neuron", "activation_function", "resnet_dt", "precision")
    return {"type_map": list(data["type_map"]),
            "descriptor": {"type": "se_e2_a", **{k: copy.deepcopy(desc[k]) for k in keys}},
            "fitting_net": {"type": "ener", **{k: copy.deepcopy(fit[k]) for k in fkeys}}}


def _load_weights(model: EnergyModel, data: dict[str, Any]) -> None:
    desc, fit = data["descriptor"], data["fitting"]
    ntypes = len(model.type_map)
    for k, net in enumerate(model.descriptor.nets):
        net_data = desc["embeddings"]["networks"][k]
        _require(net_data is not None, "a missing embedding network")
        _load_net(net, net_data)
    for t, net in enumerate(model.fitting.nets):
        _load_net(net, fit["nets"]["networks"][t])
    _copy_checked(model.descriptor.davg, desc["@variables"]["davg"], "descriptor davg")
    _copy_checked(model.descriptor.dstd, desc["@variables"]["dstd"], "descriptor dstd")
    if desc.get("compress") is not None:
        _load_tables(model.descriptor, desc["compress"]["@variables"])
    bias_atom_e = fit["@variables"].get("bias_atom_e")
    if bias_atom_e is not None:  # (ntypes, 1)
        _copy_checked(model.fitting.bias_atom_e, np.reshape(bias_atom_e, ntypes), "fitting bias_atom_e")
    out_bias = (data.get("@variables") or {}).get("out_bias")
    if out_bias is not None:  # (1, ntypes, 1): one output (energy) of dimension 1
        _copy_checked(model.fitting.out_bias, np.reshape(out_bias, ntypes), "model out_bias")
