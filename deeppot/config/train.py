"""The `learning_rate`, `loss`, `optimizer` and `training` sections of input.json (spec §2, §7.1, §8, §9.1).

Keys, aliases and defaults follow DeePMD-kit 3.2's argument schema, so the normalised sections equal what
`dp train` writes to out.json. DeePMD features that deeppot does not implement are accepted while switched off
(their default) and raise a ConfigError saying "not supported" when switched on.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from deeppot.config.schema import ConfigError, Key, list_of, non_negative, normalize, one_of, positive

Check = Callable[[Any], str | None]


class _Omit:
    """Default of a key that DeePMD leaves out of out.json when not given (optional, no default)."""

    def __repr__(self) -> str:
        return "<omitted>"


OMIT = _Omit()
DEFAULT_STOP_LR = 5e-8  # DeePMD ≥ 3.1 when neither stop_lr nor stop_lr_ratio is given (spec §8)


# value checks ------------------------------------------------------------------------------------------------------


def _optional(check: Check) -> Check:
    """Let null through, check anything else."""
    return lambda value: None if value is None else check(value)


def _in_unit_interval(value: float) -> str | None:
    return None if 0.0 <= value < 1.0 else "must be in [0, 1)"


def _only(allowed: Any, feature: str) -> Check:
    """Accept only `allowed` (the 'off' value) for a DeePMD feature deeppot does not implement."""

    def check(value: Any) -> str | None:
        ok = value is allowed if allowed is None or isinstance(allowed, bool) else value == allowed
        return None if ok else f"{feature} is not supported by deeppot (only {allowed!r} is)"

    return check


def _batch_size(value: Any) -> str | None:
    if isinstance(value, int):
        return positive(value)
    if isinstance(value, list):
        return list_of(int, 1)(value) or (None if all(v > 0 for v in value) else "entries must be > 0")
    rule, sep, number = value.partition(":")
    if value == "auto" or (sep and rule in ("auto", "max", "filter") and number.isdigit() and int(number) > 0):
        return None
    if rule == "mixed":
        return "'mixed:N' is TensorFlow-only and not supported by deeppot"
    return 'must be an int, a list of ints, "auto", "auto:N", "max:N" or "filter:N" (N > 0)'


def _systems(value: Any) -> str | None:
    return list_of(str, 1)(value) if isinstance(value, list) else (None if value else "must not be empty")


def _auto_prob(value: str) -> str | None:
    ok = value in ("prob_uniform", "prob_sys_size") or value.startswith("prob_sys_size;")
    return None if ok else "must be 'prob_uniform', 'prob_sys_size' or 'prob_sys_size;s0:e0:w0;...'"


def _numbers(value: list) -> str | None:
    ok = all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    return None if ok else "must be a list of numbers"


# schemas (key order = DeePMD's, so defaults land where `dp train` puts them in out.json) --------------------------

LEARNING_RATE_KEYS = (
    Key("start_lr", (float,), check=positive, doc="learning rate at step 0 (after warmup)"),
    Key("stop_lr", (float, type(None)), None, check=_optional(non_negative)),
    Key("stop_lr_ratio", (float, type(None)), None, check=_optional(non_negative)),
    Key("warmup_steps", (int,), 0, check=non_negative),
    Key("warmup_ratio", (float, type(None)), None, check=_optional(_in_unit_interval)),
    Key("warmup_start_factor", (float,), 0.0, check=non_negative),
    # multiplies the optimizer's rate by the number of ranks as DeePMD's TF trainer does (its PT trainer ignores it)
    Key("scale_by_worker", (str,), "linear", check=one_of("linear", "sqrt", "none")),
    Key("type", (str,), "exp"),
    Key("decay_steps", (int,), 5000, check=positive),
    Key("decay_rate", (float, type(None)), None, check=_optional(positive)),
    Key("smooth", (bool,), False),
)


def _pref(name: str, default: float = 0.0, check: Check = non_negative) -> Key:
    return Key(name, (float,), default, check=check)


_GF = _only(0.0, "the generalized-force loss")
_H = _only(0.0, "the Hessian loss")

LOSS_KEYS = (
    Key("type", (str,), "ener"),
    _pref("start_pref_e", 0.02), _pref("limit_pref_e", 1.0),
    _pref("start_pref_f", 1000.0), _pref("limit_pref_f", 1.0),
    _pref("start_pref_v"), _pref("limit_pref_v"),
    _pref("start_pref_h", check=_H), _pref("limit_pref_h", check=_H),
    _pref("start_pref_ae"), _pref("limit_pref_ae"),
    _pref("start_pref_pf"), _pref("limit_pref_pf"),
    Key("use_default_pf", (bool,), False),
    Key("relative_f", (float, type(None)), OMIT, check=_only(None, "the relative force loss")),
    Key("enable_atom_ener_coeff", (bool,), False, check=_only(False, "enable_atom_ener_coeff")),
    _pref("start_pref_gf", check=_GF), _pref("limit_pref_gf", check=_GF),
    Key("numb_generalized_coord", (int,), 0, check=_only(0, "the generalized-force loss")),
    Key("use_huber", (bool,), False, check=_only(False, "the Huber loss")),
    Key("loss_func", (str,), "mse", check=_only("mse", "a loss_func other than 'mse'")),
    Key("f_use_norm", (bool,), False, check=_only(False, "f_use_norm")),
    Key("huber_delta", (float, list), 0.01),
    Key("intensive_ener_virial", (bool,), False),
)


OPTIMIZER_KEYS = (
    Key("type", (str,), "Adam"),
    Key("adam_beta1", (float,), 0.9, check=_in_unit_interval),
    Key("adam_beta2", (float,), 0.999, check=_in_unit_interval),
    # 0.0 for AdamW too: DeePMD's compat step fills weight_decay=0.0 before its schema's AdamW default (0.001)
    Key("weight_decay", (float,), 0.0, check=non_negative),
)

_DATA_KEYS = (
    Key("systems", (list, str), check=_systems, doc="system directories, or one parent directory"),
    Key("rglob_patterns", (list, type(None)), None, check=_optional(list_of(str))),
    Key("batch_size", (list, str, int), "auto", check=_batch_size),
    Key("auto_prob", (str,), "prob_sys_size", aliases=("auto_prob_style",), check=_auto_prob),
    Key("sys_probs", (list, type(None)), None, aliases=("sys_weights",), check=_optional(_numbers)),
)
TRAINING_DATA_KEYS = (
    *_DATA_KEYS,
    Key("min_pair_dist", (float,), 0.0, check=_only(0.0, "filtering frames by min_pair_dist")),
)
VALIDATION_DATA_KEYS = (*_DATA_KEYS, Key("numb_btch", (int,), 1, aliases=("numb_batch",), check=positive))

# DeePMD-kit TF's mixed precision; deeppot runs the bfloat16 variant only (torch.autocast, deeppot.train.memory)
MIXED_PRECISION_KEYS = (
    Key("output_prec", (str,), "float32", check=_only("float32", "an output_prec other than 'float32'")),
    Key("compute_prec", (str,), check=_only("bfloat16", "a compute_prec other than 'bfloat16' (float16 would "
                                             "need loss scaling)")),
)

TRAINING_KEYS = (
    Key("training_data", (dict,), sub=TRAINING_DATA_KEYS, doc="training_data section"),
    Key("validation_data", (dict, type(None)), None, sub=VALIDATION_DATA_KEYS),
    Key("stat_file", (str,), OMIT),
    Key("stat_file_mode", (str,), "update", check=one_of("update", "read")),
    Key("mixed_precision", (dict,), OMIT, sub=MIXED_PRECISION_KEYS),
    Key("numb_steps", (int,), OMIT, aliases=("stop_batch", "num_step", "num_steps", "numb_step"),
        check=non_negative),
    Key("numb_epoch", (float,), OMIT, aliases=("num_epochs", "num_epoch", "numb_epochs"), check=positive),
    Key("seed", (int, type(None)), OMIT),
    Key("disp_file", (str,), "lcurve.out"),
    Key("disp_freq", (int,), 1000, check=positive),
    Key("save_freq", (int,), 1000, check=positive),
    Key("save_dir", (str, type(None)), None),
    Key("save_ckpt", (str,), "model.ckpt"),
    Key("max_ckpt_keep", (int,), 5),
    Key("ckpt_keep_ratio", (float, type(None)), None,
        check=_optional(lambda v: None if 0.0 < v <= 1.0 else "must be in (0, 1]")),
    Key("enable_ema", (bool,), False, check=_only(False, "EMA weights")),
    Key("ema_decay", (float,), 0.999),
    Key("ema_ckpt_keep", (int, type(None)), None),
    Key("change_bias_after_training", (bool,), False, check=_only(False, "change_bias_after_training")),
    Key("disp_training", (bool,), True),
    Key("time_training", (bool,), True),
    Key("disp_avg", (bool,), False),
    Key("profiling", (bool,), False),
    Key("profiling_file", (str,), "timeline.json"),
    Key("enable_profiler", (bool,), False),
    Key("tensorboard", (bool,), False),  # accepted and ignored: deeppot writes no TensorBoard events
    Key("tensorboard_log_dir", (str,), "log"),
    Key("tensorboard_freq", (int,), 1, check=positive),
    Key("gradient_max_norm", (float,), OMIT, check=non_negative),
    Key("acc_freq", (int,), 1, check=positive),  # Paddle only; accepted and ignored as by DeePMD PT
    # 1: optimizer states sharded over the ranks (deeppot.train.memory); 2 and 3 (gradients, parameters) are not
    Key("zero_stage", (int,), 0, check=lambda v: None if v in (0, 1) else
        "ZeRO stages 2 and 3 (sharded gradients and parameters) are not supported by deeppot (only 0 and 1 are)"),
    Key("neighbor_graph_method", (str,), "auto", check=one_of("auto", "nv", "dense")),
    Key("enable_compile", (bool,), False),
    Key("enable_tf32", (bool,), False),
    # deeppot only (not a DeePMD-kit key, so left out of out.json unless given): batches per optimizer step
    Key("grad_accum_steps", (int,), OMIT, check=positive),
    # deeppot only, memory for large frames (deeppot.train.memory): recompute the embedding net in the backward
    Key("activation_checkpointing", (bool,), OMIT),
    # deeppot only: at most this many centre atoms per pass of the model (with checkpointing: bounded activations)
    Key("atom_chunk", (int,), OMIT, check=positive),
)

# DeePMD variants of a section's `type` that deeppot does not implement (named as such instead of "unknown")
_KNOWN_TYPES = {
    "learning_rate": (("exp",), ("cosine", "wsd")),
    "loss": (("ener", "ener_hess"), ("dens", "ener_spin", "dos", "population", "property", "tensor")),
    "optimizer": (("Adam", "AdamW"), ("LKF", "AdaMuon", "HybridMuon")),
}
_MULTI_TASK_TRAINING_KEYS = ("data_dict", "model_prob")


# section normalisers ---------------------------------------------------------------------------------------------


def _normalize(section: Any, keys: tuple[Key, ...], path: str) -> dict[str, Any]:
    """`schema.normalize`, then drop the keys DeePMD leaves out when not given."""
    return {k: v for k, v in normalize(section, keys, path).items() if v is not OMIT}


def _check_type(section: Any, path: str) -> None:
    """Name an unsupported variant before its variant-only keys are reported as unknown."""
    if not isinstance(section, dict) or "type" not in section:
        return
    supported, unsupported = _KNOWN_TYPES[path]
    kind = section["type"]
    if kind in supported:
        return
    choices = ", ".join(map(repr, supported))
    what = "is not supported by deeppot" if kind in unsupported else "is not a known type"
    raise ConfigError(f"{path}.type: {kind!r} {what}; supported: {choices}")


def normalize_learning_rate(section: Any, path: str = "learning_rate") -> dict[str, Any]:
    """Validate and fill `learning_rate` (spec §8). Only `type: "exp"` is supported."""
    _check_type(section, path)
    lr = _normalize(section, LEARNING_RATE_KEYS, path)
    if lr["stop_lr"] is not None and lr["stop_lr_ratio"] is not None:
        raise ConfigError(f"{path}.stop_lr: stop_lr and stop_lr_ratio are mutually exclusive; give one")
    if lr["stop_lr"] is None and lr["stop_lr_ratio"] is None:
        lr["stop_lr"] = DEFAULT_STOP_LR
    if lr["warmup_steps"] != 0 and lr["warmup_ratio"] is not None:
        raise ConfigError(f"{path}.warmup_ratio: warmup_steps and warmup_ratio are mutually exclusive; give one")
    return lr


def normalize_loss(section: Any, path: str = "loss") -> dict[str, Any]:
    """Validate and fill `loss` (spec §7.1). Only `type: "ener"` (alias ener_hess) is supported."""
    _check_type(section, path)
    loss = _normalize(section, LOSS_KEYS, path)
    loss["type"] = "ener"  # resolve the ener_hess alias as DeePMD does
    return loss


def normalize_optimizer(section: Any, path: str = "optimizer") -> dict[str, Any]:
    """Validate and fill `optimizer` (spec §9.1): Adam or AdamW."""
    _check_type(section, path)
    return _normalize(section, OPTIMIZER_KEYS, path)


def normalize_training(section: Any, path: str = "training") -> dict[str, Any]:
    """Validate and fill `training` (spec §9.1); legacy keys must have been moved already."""
    if isinstance(section, dict):
        for key in _MULTI_TASK_TRAINING_KEYS:
            if key in section:
                raise ConfigError(f"{path}.{key}: multi-task training is not supported by deeppot")
    training = _normalize(section, TRAINING_KEYS, path)
    has_steps, has_epoch = "numb_steps" in training, "numb_epoch" in training
    if has_steps and has_epoch:
        raise ConfigError(f"{path}.numb_epoch: numb_steps and numb_epoch are mutually exclusive; give one")
    if not has_steps and not has_epoch:
        raise ConfigError(f"{path}.numb_steps: required key is missing (give numb_steps or numb_epoch)")
    _check_memory_keys(training, path)
    return training


def _check_memory_keys(training: dict[str, Any], path: str) -> None:
    """The memory keys swap the model's energy function, as enable_compile does: one or the other."""
    on = [key for key in ("activation_checkpointing", "atom_chunk", "mixed_precision") if training.get(key)]
    if on and training["enable_compile"]:
        raise ConfigError(f"{path}.{on[0]}: not together with enable_compile (torch.compile replaces the "
                          "energy function this option wraps); switch one off")


# legacy keys under `training` (spec §2 step 1) --------------------------------------------------------------------

LEGACY_WARMUP_KEYS = ("warmup_steps", "warmup_ratio", "warmup_start_factor")
LEGACY_OPTIMIZER_KEYS = ("opt_type", "kf_blocksize", "kf_start_pref_e", "kf_limit_pref_e", "kf_start_pref_f",
                         "kf_limit_pref_f", "weight_decay", "momentum", "muon_momentum", "adam_beta1", "adam_beta2",
                         "lr_adjust", "lr_adjust_coeff", "muon_2d_only", "min_2d_dim")


def move_legacy_training_keys(config: dict[str, Any]) -> dict[str, Any]:
    """Return a copy with warmup keys moved from `training` to `learning_rate` and optimizer keys to `optimizer`.

    `training.opt_type` becomes `optimizer.type`; a key moved from `training` wins over the same key already in
    `optimizer` (as in DeePMD); a warmup key given in both places is an error.
    """
    config = copy.deepcopy(config)
    training = config.get("training")
    if not isinstance(training, dict):
        return config
    lr = config.get("learning_rate")
    for key in (k for k in LEGACY_WARMUP_KEYS if k in training):
        if not isinstance(lr, dict):
            training.pop(key)  # DeePMD drops them when there is no learning_rate section to move them to
        elif key in lr:
            raise ConfigError(f"training.{key}: also given in learning_rate; define warmup only in learning_rate")
        else:
            lr[key] = training.pop(key)
    moved = {k: training.pop(k) for k in LEGACY_OPTIMIZER_KEYS if k in training}
    if "opt_type" in moved:
        moved["type"] = moved.pop("opt_type")
    if moved:
        optimizer = config.get("optimizer")
        config["optimizer"] = {**(optimizer if isinstance(optimizer, dict) else {}), **moved}
    return config
