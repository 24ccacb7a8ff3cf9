"""input.json -> the fully normalised configuration that `dp train` writes to out.json (spec §2, §9.7).

Pipeline: legacy conversion (v0/v1 layouts, `decay_rate` -> `stop_lr`, `training.numb_test` dropped, warmup and
optimizer keys moved out of `training`), then every section normalised (aliases resolved, `_comment` keys dropped,
defaults filled, strict key check). Every error is a `ConfigError` whose message starts with the key path.
"""

from __future__ import annotations

import copy
import difflib
import json
import math
import os
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from deeppot.config.model import normalize_model
from deeppot.config.schema import ConfigError
from deeppot.config.train import (
    move_legacy_training_keys,
    normalize_learning_rate,
    normalize_loss,
    normalize_optimizer,
    normalize_training,
)

SECTIONS: dict[str, Callable[[Any, str], dict[str, Any]]] = {
    "model": normalize_model,
    "learning_rate": normalize_learning_rate,
    "loss": normalize_loss,
    "training": normalize_training,
    "optimizer": normalize_optimizer,
}
REQUIRED_SECTIONS = ("model", "learning_rate", "training")
UNSUPPORTED_SECTIONS = {"nvnmd": "NVNMD (TensorFlow only)", "validating": "full validation (`validating`)"}
MULTI_TASK_SECTIONS = ("loss_dict",)
NUMB_STEPS_ALIASES = ("numb_steps", "stop_batch", "num_step", "num_steps", "numb_step")


def normalize_input(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Return the normalised input (every default filled) from a parsed input.json; `raw` is not modified.

    Sections come out in the order given (after legacy conversion), missing ones after them, plus DeePMD's
    empty `validating` section, so that the dumped result matches DeePMD-kit's out.json.
    """
    if not isinstance(raw, Mapping):
        raise ConfigError(f"input: expected a JSON object at the top level, got {type(raw).__name__}")
    config = {k: v for k, v in copy.deepcopy(dict(raw)).items() if not k.startswith("_")}
    config = move_legacy_training_keys(_convert_legacy(config))
    _check_top_level(config)
    names = [k for k in config if k in SECTIONS] + [k for k in SECTIONS if k not in config]
    out: dict[str, Any] = {}
    for name in names:
        if name not in config and name in REQUIRED_SECTIONS:
            raise ConfigError(f"{name}: required section is missing")
        out[name] = SECTIONS[name](config.get(name, {}), name)
    out["validating"] = {}  # DeePMD writes its (off) full-validation section as {}
    _check_mixed_precision(out)
    return out


def compat_input(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The input after DeePMD-kit's layout conversions only (v0/v1 -> v2, `numb_test` dropped), what `dp train`
    dumps to input_v2_compat.json; `raw` is not modified."""
    return _convert_legacy(copy.deepcopy(dict(raw)))


def _check_mixed_precision(config: dict[str, Any]) -> None:
    """training.mixed_precision (bfloat16 autocast) applies to float32 nets only."""
    model = config.get("model", {})
    precisions = [model.get(part, {}).get("precision") for part in ("descriptor", "fitting_net")]
    if "mixed_precision" in config["training"] and precisions != ["float32", "float32"]:
        raise ConfigError("training.mixed_precision: needs a float32 model (model.descriptor.precision and "
                          f'model.fitting_net.precision "float32"; got {precisions})')


def _check_top_level(config: dict[str, Any]) -> None:
    for name, value in config.items():
        if name in UNSUPPORTED_SECTIONS:
            if value:  # an empty section switches nothing on
                raise ConfigError(f"{name}: {UNSUPPORTED_SECTIONS[name]} is not supported by deeppot")
        elif name in MULTI_TASK_SECTIONS:
            raise ConfigError(f"{name}: multi-task training is not supported by deeppot")
        elif name not in SECTIONS:
            valid = [*SECTIONS, *UNSUPPORTED_SECTIONS]
            close = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else f"valid sections: {', '.join(valid)}"
            raise ConfigError(f"{name}: unknown top-level key {name!r}; {hint}")


# legacy layouts (spec §2 step 1) ----------------------------------------------------------------------------------


def _convert_legacy(config: dict[str, Any]) -> dict[str, Any]:
    """v0 (no `model`) and v1 (`training.systems`) layouts -> v2; drop `training.numb_test`."""
    if "model" not in config:
        config = _convert_v1_to_v2(_convert_v0_to_v1(config))
    elif isinstance(config.get("training"), dict) and "systems" in config["training"]:
        config = _convert_v1_to_v2(config)
    if isinstance(config.get("training"), dict):
        config["training"].pop("numb_test", None)  # has had no effect since DeePMD-kit v2.0
    return config


def _pick(src: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: src[k] for k in keys if k in src}


def _renamed(src: Mapping[str, Any], name: str, *old_names: str) -> dict[str, Any]:
    """{name: value of the first of `old_names` present in src}, or {} when none is."""
    return next(({name: src[k]} for k in old_names if k in src), {})


def _convert_v0_to_v1(v0: dict[str, Any]) -> dict[str, Any]:
    """The flat DeePMD-kit 0.x layout -> sections (smooth descriptor only, which is se_a)."""
    if not v0.get("use_smooth", True):
        raise ConfigError("use_smooth: the non-smooth (loc_frame) descriptor of v0 inputs is not supported")
    seed = _pick(v0, ("seed",))
    descriptor = {"type": "se_a", **seed, **_renamed(v0, "sel", "sel_a"), **_renamed(v0, "neuron", "filter_neuron"),
                  **_pick(v0, ("rcut", "rcut_smth", "axis_neuron", "n_axis_neuron")),
                  "resnet_dt": v0.get("filter_resnet_dt", False)}
    fitting = {**seed, **_renamed(v0, "neuron", "fitting_neuron", "n_neuron"),
               "resnet_dt": v0.get("fitting_resnet_dt", v0.get("resnet_dt", True))}
    prefs = tuple(f"{s}_pref_{t}" for t in ("e", "f", "v", "ae") for s in ("start", "limit"))
    training_keys = ("seed", "systems", "set_prefix", "stop_batch", "batch_size", "disp_file", "disp_freq",
                     "numb_test", "save_freq", "save_ckpt", "disp_training", "time_training", "profiling",
                     "profiling_file")
    return {
        # type_map was no v0 key, but deeppot's model needs one: take it if the user added it
        "model": {**_pick(v0, ("type_map",)), "descriptor": descriptor, "fitting_net": fitting},
        "learning_rate": {"type": "exp", **_pick(v0, ("decay_steps", "decay_rate", "start_lr"))},
        "loss": _pick(v0, prefs),
        "training": _pick(v0, training_keys),
    }


def _convert_v1_to_v2(config: dict[str, Any]) -> dict[str, Any]:
    """Move the data keys of `training` into `training.training_data`; `decay_rate` -> `stop_lr`."""
    training = config["training"]
    if "training_data" in training:
        raise ConfigError("training.systems: both the v1 (training.systems) and v2 (training.training_data) "
                          "layouts are given; keep training_data")
    data_keys = ("systems", "set_prefix", "batch_size", "sys_prob", "auto_prob", "sys_weights", "auto_prob_style")
    config["training"] = {k: v for k, v in training.items() if k not in data_keys}
    config["training"]["training_data"] = _pick(training, data_keys)
    _decay_rate_to_stop_lr(config)
    return config


def _decay_rate_to_stop_lr(config: dict[str, Any]) -> None:
    """v1 `decay_rate` -> stop_lr = start_lr · decay_rate^(numb_steps / decay_steps) (spec §2)."""
    lr = config.get("learning_rate")
    if not isinstance(lr, dict) or "decay_rate" not in lr:
        return
    steps = next((config["training"][k] for k in NUMB_STEPS_ALIASES if k in config["training"]), None)
    for path, value in (("training.stop_batch", steps), ("learning_rate.start_lr", lr.get("start_lr"))):
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise ConfigError(f"{path}: needed as a number to convert the legacy learning_rate.decay_rate")
    decay_steps = lr.get("decay_steps", 5000)
    rate = lr.pop("decay_rate")
    if not isinstance(rate, int | float) or rate <= 0 or not isinstance(decay_steps, int) or decay_steps <= 0:
        raise ConfigError(f"learning_rate.decay_rate: cannot convert decay_rate={rate!r} with "
                          f"decay_steps={decay_steps!r} to stop_lr (both must be > 0)")
    lr["stop_lr"] = lr["start_lr"] * math.exp(math.log(rate) * (steps / decay_steps))


# files ------------------------------------------------------------------------------------------------------------


def load_input(path: str | os.PathLike) -> dict[str, Any]:
    """Read input.json as is (not normalised); a syntax error names the file, line and column."""
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise ConfigError(f"{path}: cannot read the input file ({err.strerror})") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}: invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a JSON object at the top level, got {type(raw).__name__}")
    return raw


def resolve_data_paths(config: dict[str, Any], input_dir: Path) -> None:
    """Each data section's systems in place: relative to the working directory (as DeePMD-kit), else to the
    folder of input.json, so `deeppot train examples/water/input.json` works from anywhere."""
    for key in ("training_data", "validation_data"):
        section = config["training"].get(key)
        if not section:
            continue
        systems = section["systems"]
        paths = [systems] if isinstance(systems, str) else list(systems)
        resolved = [data_path(p, input_dir) for p in paths]
        section["systems"] = resolved if isinstance(systems, list) else resolved[0]


def data_path(path: str, input_dir: Path, input_first: bool = False) -> str:
    """`path` if it exists from here, else the same path under `input_dir` if that exists; with `input_first` (the
    rule of DeePMD-kit's `dp test --train-data`) the path under `input_dir` wherever that exists. For an HDF5 system
    `file.h5#/group` the file part decides."""
    file = path.split("#", 1)[0]
    beside = (input_dir / file).exists()
    return str(input_dir / path) if beside and (input_first or not Path(file).exists()) else path


def write_out_json(config: Mapping[str, Any], path: str | os.PathLike) -> None:
    """Write `config` as JSON with indent 4 (as `dp train` writes out.json), atomically.

    The text goes to a temporary file in the same directory, then `os.replace` puts it in place, so a reader
    (or a crash) never sees a half-written file.
    """
    path = Path(path)
    # a unique name opened with "x" (not mkstemp, whose 0600 mode would stick to out.json after the rename)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "x") as fout:
            json.dump(config, fout, indent=4)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
