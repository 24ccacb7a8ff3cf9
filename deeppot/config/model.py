"""The `model` section of input.json: se_e2_a descriptor + energy fitting (spec §4.1, §5.1)."""

from __future__ import annotations

from typing import Any

from deeppot.config.schema import ConfigError, Key, list_of, non_negative, normalize, one_of, positive

ACTIVATIONS = ("tanh", "gelu", "gelu_tf", "relu", "relu6", "softplus", "sigmoid", "silu", "linear", "none")
PRECISIONS = ("default", "float64", "float32")


def _activation(value: str) -> str | None:
    return None if value in ACTIVATIONS else f"unsupported activation; choose one of {', '.join(ACTIVATIONS)}"


def _sel(value: Any) -> str | None:
    if isinstance(value, str):
        ok = value == "auto" or (value.startswith("auto:") and _is_float(value[5:]))
        return None if ok else 'must be a list of integers, "auto" or "auto:<factor>"'
    if not value or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        return "must be a non-empty list of non-negative integers"
    return None


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _info(value: dict) -> str | None:
    """DeePMD-kit's free-form model info; its `observed_type`, where given, presets the observed types."""
    observed = value.get("observed_type")
    if observed is not None and not (isinstance(observed, list) and all(isinstance(t, str) for t in observed)):
        return "observed_type must be a list of type names"
    return None


def _type_pairs(value: Any) -> str | None:
    ok = all(isinstance(p, list) and len(p) == 2 and all(isinstance(t, int) for t in p) for p in value)
    return None if ok else "must be a list of [type_a, type_b] pairs of integers"


DESCRIPTOR_KEYS = (
    Key("type", (str,), aliases=(), check=one_of("se_e2_a", "se_a"), doc="descriptor type, se_e2_a"),
    Key("sel", (list, str), "auto", check=_sel),
    Key("rcut", (float,), 6.0, check=positive),
    Key("rcut_smth", (float,), 0.5, check=non_negative),
    Key("neuron", (list,), lambda: [10, 20, 40], check=list_of(int, 1)),
    Key("axis_neuron", (int,), 4, aliases=("n_axis_neuron",), check=positive),
    Key("activation_function", (str,), "tanh", check=_activation),
    Key("resnet_dt", (bool,), False),
    Key("type_one_side", (bool,), False),
    Key("precision", (str,), "default", check=one_of(*PRECISIONS)),
    Key("trainable", (bool,), True),
    Key("seed", (int, type(None)), None),
    Key("exclude_types", (list,), list, check=_type_pairs),
    Key("env_protection", (float,), 0.0, check=non_negative),
    Key("set_davg_zero", (bool,), False),
)

FITTING_KEYS = (
    Key("type", (str,), "ener", check=one_of("ener")),
    Key("neuron", (list,), lambda: [120, 120, 120], aliases=("n_neuron",), check=list_of(int, 1)),
    Key("activation_function", (str,), "tanh", check=_activation),
    Key("resnet_dt", (bool,), True),
    Key("precision", (str,), "default", check=one_of(*PRECISIONS)),
    Key("numb_fparam", (int,), 0, check=one_of(0)),
    Key("numb_aparam", (int,), 0, check=one_of(0)),
    Key("dim_case_embd", (int,), 0, check=one_of(0)),
    Key("default_fparam", (list, type(None)), None),
    Key("trainable", (bool, list), True),
    Key("rcond", (float, type(None)), None),
    Key("seed", (int, type(None)), None),
    Key("atom_ener", (list,), list, check=lambda v: None if not any(x is not None for x in v) else "is not supported"),
    Key("use_aparam_as_mask", (bool,), False, check=one_of(False)),
    Key("layer_name", (list, type(None)), None),
)

MODEL_KEYS = (
    Key("type", (str,), "standard", check=one_of("standard")),
    Key("type_map", (list,), doc="list of element names, e.g. ['O', 'H']", check=list_of(str, 1)),
    Key("descriptor", (dict,), sub=DESCRIPTOR_KEYS, doc="descriptor section"),
    Key("fitting_net", (dict,), sub=FITTING_KEYS, doc="fitting_net section"),
    Key("data_stat_nbatch", (int,), 10, check=positive),
    Key("data_stat_protect", (float,), 1e-2, check=positive),
    Key("data_bias_nsample", (int,), 10, check=positive),
    Key("pair_exclude_types", (list,), list, check=_type_pairs),
    Key("atom_exclude_types", (list,), list, check=list_of(int)),
    Key("preset_out_bias", (dict, type(None)), None),
    Key("srtab_add_bias", (bool,), True),
    Key("info", (dict,), dict, check=_info),
)

# Keys DeePMD-kit knows that deeppot does not implement: name them instead of calling them unknown.
UNSUPPORTED_MODEL_KEYS = ("type_embedding", "use_srtab", "spin", "model_dict", "shared_dict", "modifier",
                          "compress", "finetune_head", "smin_alpha", "sw_rmin", "sw_rmax", "hessian_mode")


def normalize_model(section: Any, path: str = "model") -> dict[str, Any]:
    """Validate and fill the `model` section; raise ConfigError naming the key path."""
    if isinstance(section, dict):
        for key in UNSUPPORTED_MODEL_KEYS:
            if key in section:
                raise ConfigError(f"{path}.{key}: this DeePMD-kit feature is not supported by deeppot")
        desc = section.get("descriptor")
        if isinstance(desc, dict) and desc.get("type") not in (None, "se_e2_a", "se_a"):
            raise ConfigError(f"{path}.descriptor.type: descriptor {desc.get('type')!r} is not supported by "
                              "deeppot; supported: se_e2_a (alias se_a)")
    model = normalize(section, MODEL_KEYS, path)
    model["descriptor"]["type"] = "se_e2_a"  # resolve the se_a alias
    _check_model(model, path)
    return model


def _check_model(model: dict[str, Any], path: str) -> None:
    ntypes = len(model["type_map"])
    desc = model["descriptor"]
    if desc["rcut_smth"] >= desc["rcut"]:
        raise ConfigError(f"{path}.descriptor.rcut_smth: must be smaller than rcut "
                          f"(got rcut_smth={desc['rcut_smth']}, rcut={desc['rcut']})")
    if isinstance(desc["sel"], list) and len(desc["sel"]) != ntypes:
        raise ConfigError(f"{path}.descriptor.sel: needs one entry per type in type_map ({ntypes}), "
                          f"got {len(desc['sel'])}")
    if desc["axis_neuron"] > desc["neuron"][-1]:
        raise ConfigError(f"{path}.descriptor.axis_neuron: must be <= the last embedding width "
                          f"{desc['neuron'][-1]} (got {desc['axis_neuron']})")
    for name, pairs in (("descriptor.exclude_types", desc["exclude_types"]),
                        ("pair_exclude_types", model["pair_exclude_types"])):
        if any(not 0 <= t < ntypes for pair in pairs for t in pair):
            raise ConfigError(f"{path}.{name}: type indices must be in [0, {ntypes})")
    if model["pair_exclude_types"] or model["atom_exclude_types"]:
        raise ConfigError(f"{path}.pair_exclude_types/atom_exclude_types: not supported by deeppot yet")


def precision_dtype(name: str):
    """Map a DeePMD precision name to a torch dtype ("default" = float64)."""
    import torch

    return {"default": torch.float64, "float64": torch.float64, "float32": torch.float32}[name]
