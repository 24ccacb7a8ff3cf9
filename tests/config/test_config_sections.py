"""Errors and defaults of the input.json sections, checked through `normalize_input` (spec §2, §7.1, §8, §9.1)."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from helpers import minimal_input

from deeppot.config.input import normalize_input
from deeppot.config.schema import ConfigError


def with_change(path: str, value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of `base` (default: minimal_input()) with the dotted `path` set to `value` (DELETE removes it)."""
    config = copy.deepcopy(base if base is not None else minimal_input())
    *parents, last = path.split(".")
    node = config
    for name in parents:
        node = node.setdefault(name, {})
    if value is DELETE:
        node.pop(last)
    else:
        node[last] = value
    return config


DELETE = object()


def error_of(config: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        normalize_input(config)
    return str(info.value)


# defaults (spec §7.1, §8, §9.1, §17) ----------------------------------------------------------------------------


def test_defaults_filled_from_the_spec():
    out = normalize_input(minimal_input())
    lr, loss, opt, training = out["learning_rate"], out["loss"], out["optimizer"], out["training"]
    assert lr == {"start_lr": 1e-3, "stop_lr": 5e-8, "stop_lr_ratio": None, "warmup_steps": 0, "warmup_ratio": None,
                  "warmup_start_factor": 0.0, "scale_by_worker": "linear", "type": "exp", "decay_steps": 5000,
                  "decay_rate": None, "smooth": False}
    expected_prefs = {"e": (0.02, 1.0), "f": (1000.0, 1.0), "v": (0.0, 0.0), "ae": (0.0, 0.0), "pf": (0.0, 0.0),
                      "gf": (0.0, 0.0), "h": (0.0, 0.0)}
    for term, (start, limit) in expected_prefs.items():
        assert (loss[f"start_pref_{term}"], loss[f"limit_pref_{term}"]) == (start, limit), term
    assert loss["type"] == "ener" and loss["loss_func"] == "mse" and loss["use_huber"] is False
    assert loss["intensive_ener_virial"] is False and loss["huber_delta"] == 0.01 and "relative_f" not in loss
    assert opt == {"type": "Adam", "adam_beta1": 0.9, "adam_beta2": 0.999, "weight_decay": 0.0}
    assert training["training_data"] == {"systems": ["sys_a"], "rglob_patterns": None, "batch_size": "auto",
                                         "auto_prob": "prob_sys_size", "sys_probs": None, "min_pair_dist": 0.0}
    assert training["validation_data"] is None
    expected = {"disp_file": "lcurve.out", "disp_freq": 1000, "save_freq": 1000, "save_ckpt": "model.ckpt",
                "save_dir": None, "max_ckpt_keep": 5, "ckpt_keep_ratio": None, "disp_training": True,
                "time_training": True, "disp_avg": False, "enable_ema": False, "zero_stage": 0,
                "change_bias_after_training": False, "tensorboard": False, "profiling": False}
    assert {k: training[k] for k in expected} == expected
    # optional keys without a default stay out, as in DeePMD's out.json
    assert not {"seed", "numb_epoch", "gradient_max_norm", "stat_file"} & set(training)
    assert out["validating"] == {}


def test_aliases_resolved():
    config = minimal_input()
    config["training"] = {"training_data": {"systems": "data_dir", "sys_weights": [0.5, -1], "auto_prob_style":
                                            "prob_uniform", "batch_size": "max:64"},
                          "validation_data": {"systems": ["v"], "numb_batch": 3}, "stop_batch": 7}
    config["loss"] = {"type": "ener_hess", "start_pref_v": 1, "limit_pref_v": 2}
    training = normalize_input(config)["training"]
    assert training["numb_steps"] == 7 and "stop_batch" not in training
    data = training["training_data"]
    assert data["sys_probs"] == [0.5, -1] and data["auto_prob"] == "prob_uniform" and data["systems"] == "data_dir"
    assert training["validation_data"]["numb_btch"] == 3
    assert normalize_input(config)["loss"]["type"] == "ener"


@pytest.mark.parametrize("alias", ["num_steps", "num_step", "numb_step", "stop_batch"])
def test_numb_steps_aliases(alias):
    config = with_change("training.numb_steps", DELETE)
    config["training"][alias] = 42
    assert normalize_input(config)["training"]["numb_steps"] == 42


def test_numb_epoch_alone_is_accepted():
    config = with_change("training.numb_steps", DELETE)
    config["training"]["numb_epochs"] = 2
    training = normalize_input(config)["training"]
    assert training["numb_epoch"] == 2 and "numb_steps" not in training


def test_comment_keys_dropped_everywhere():
    config = minimal_input()
    config["_comment"] = "top"
    config["training"]["_comment"] = "x"
    config["training"]["training_data"]["_note"] = "y"
    config["learning_rate"]["_comment"] = "z"
    config["model"]["descriptor"]["_comment"] = "w"
    out = normalize_input(config)
    text = repr(out)
    assert "_comment" not in text and "_note" not in text


def test_input_not_mutated():
    config = with_change("training.opt_type", "AdamW")
    before = copy.deepcopy(config)
    normalize_input(config)
    assert config == before


@pytest.mark.parametrize("value", ["auto", "auto:32", "max:64", "filter:100", 4, [1, 2]])
def test_batch_size_rules_accepted(value):
    out = normalize_input(with_change("training.training_data.batch_size", value))
    assert out["training"]["training_data"]["batch_size"] == value


@pytest.mark.parametrize("value", ["foo:3", "auto:x", "max:0", "mixed:4", 0, True, [1, 0], 1.5])
def test_batch_size_rules_rejected(value):
    assert error_of(with_change("training.training_data.batch_size", value)).startswith(
        "training.training_data.batch_size:")


# errors name the key path ----------------------------------------------------------------------------------------


def test_unknown_key_with_suggestion():
    message = error_of(with_change("loss.start_perf_e", 1.0))
    # the section path ("loss: ...", schema.py's format) or the full key path ("loss.start_perf_e: ...")
    assert message.startswith(("loss: ", "loss.start_perf_e: "))
    assert message.endswith("unknown key 'start_perf_e'; did you mean 'start_pref_e'?")


def test_unknown_key_in_training():
    message = error_of(with_change("training.disp_frequency", 10))
    assert message.startswith("training.disp_frequency: unknown key 'disp_frequency'") and "'disp_freq'" in message


def test_unknown_top_level_key_with_suggestion():
    message = error_of(with_change("trainig", {}))
    assert message.startswith("trainig: unknown top-level key 'trainig'") and "did you mean 'training'?" in message


def test_wrong_type():
    message = error_of(with_change("training.numb_steps", "1000"))
    assert message.startswith("training.numb_steps: expected int, got str")


def test_wrong_type_bool_as_number():
    assert error_of(with_change("learning_rate.start_lr", True)).startswith("learning_rate.start_lr: expected float")


def test_rcut_smth_not_below_rcut():
    message = error_of(with_change("model.descriptor.rcut_smth", 4.0))
    assert message.startswith("model.descriptor.rcut_smth:") and "smaller than rcut" in message


def test_sel_length_differs_from_ntypes():
    message = error_of(with_change("model.descriptor.sel", [4, 8, 2]))
    assert message.startswith("model.descriptor.sel:") and "(2)" in message


def test_unsupported_descriptor():
    message = error_of(with_change("model.descriptor.type", "se_atten"))
    assert message.startswith("model.descriptor.type:") and "not supported" in message


def test_numb_steps_and_numb_epoch_missing():
    message = error_of(with_change("training.numb_steps", DELETE))
    assert message.startswith("training.numb_steps: required") and "numb_epoch" in message


def test_numb_steps_and_numb_epoch_both_given():
    message = error_of(with_change("training.numb_epoch", 3))
    assert message.startswith("training.numb_epoch:") and "mutually exclusive" in message


def test_required_sections_and_keys():
    assert error_of(with_change("learning_rate", DELETE)).startswith("learning_rate: required section")
    assert error_of(with_change("learning_rate.start_lr", DELETE)).startswith("learning_rate.start_lr: required")
    assert error_of(with_change("training.training_data.systems", DELETE)).startswith(
        "training.training_data.systems: required")


@pytest.mark.parametrize(("path", "value"), [
    ("loss.relative_f", 0.1),
    ("loss.enable_atom_ener_coeff", True),
    ("loss.loss_func", "mae"),
    ("loss.use_huber", True),
    ("loss.f_use_norm", True),
    ("loss.start_pref_gf", 1.0),
    ("loss.limit_pref_gf", 1.0),
    ("loss.start_pref_h", 1.0),
    ("loss.numb_generalized_coord", 3),
    ("training.enable_ema", True),
    ("training.zero_stage", 2),
    ("training.change_bias_after_training", True),
    ("training.mixed_precision.compute_prec", "float16"),
    ("training.mixed_precision.output_prec", "bfloat16"),
    ("training.training_data.min_pair_dist", 0.5),
])
def test_unsupported_feature_switched_on(path, value):
    message = error_of(with_change(path, value))
    assert message.startswith(f"{path}:") and "not supported" in message


@pytest.mark.parametrize(("path", "value"), [
    ("loss.relative_f", None), ("loss.use_huber", False), ("loss.loss_func", "mse"), ("loss.start_pref_gf", 0.0),
    ("training.enable_ema", False), ("training.zero_stage", 0), ("training.zero_stage", 1),
    ("learning_rate.scale_by_worker", "none"),
    ("training.tensorboard", True), ("training.stat_file", "stat.hdf5"), ("training.gradient_max_norm", 5.0),
])
def test_features_switched_off_or_ignored_are_accepted(path, value):
    *parents, last = path.split(".")
    node = normalize_input(with_change(path, value))
    for name in parents:
        node = node[name]
    assert node[last] == value


@pytest.mark.parametrize(("section", "kind"), [("learning_rate", "cosine"), ("loss", "dens"),
                                               ("optimizer", "LKF")])
def test_unsupported_section_types(section, kind):
    config = minimal_input()
    config[section] = {**config.get(section, {}), "type": kind}
    message = error_of(config)
    assert message.startswith(f"{section}.type: '{kind}' is not supported")


def test_unsupported_type_named_before_its_own_keys():
    config = with_change("learning_rate", {"type": "wsd", "start_lr": 1e-3, "decay_phase_ratio": 0.2})
    assert error_of(config).startswith("learning_rate.type: 'wsd' is not supported")


def test_stop_lr_and_ratio_exclusive():
    config = with_change("learning_rate.stop_lr_ratio", 1e-3, with_change("learning_rate.stop_lr", 1e-8))
    message = error_of(config)
    assert message.startswith("learning_rate.stop_lr:") and "mutually exclusive" in message


def test_stop_lr_ratio_alone_leaves_stop_lr_null():
    lr = normalize_input(with_change("learning_rate.stop_lr_ratio", 1e-3))["learning_rate"]
    assert lr["stop_lr"] is None and lr["stop_lr_ratio"] == 1e-3


def test_warmup_steps_and_ratio_exclusive():
    config = with_change("learning_rate.warmup_ratio", 0.1, with_change("learning_rate.warmup_steps", 10))
    assert error_of(config).startswith("learning_rate.warmup_ratio:")


@pytest.mark.parametrize(("path", "value"), [("learning_rate.start_lr", 0.0), ("learning_rate.decay_steps", 0),
                                             ("training.disp_freq", 0), ("loss.start_pref_e", -1.0),
                                             ("optimizer.adam_beta1", 1.5)])
def test_bad_values(path, value):
    assert error_of(with_change(path, value)).startswith(f"{path}:")


@pytest.mark.parametrize("section", ["nvnmd", "validating"])
def test_nvnmd_and_validating(section):
    assert error_of(with_change(section, {"enable": True})).startswith(f"{section}:")
    assert "not supported" in error_of(with_change(section, {"enable": True}))
    out = normalize_input(with_change(section, {}))
    assert "nvnmd" not in out and out["validating"] == {}


def test_multi_task_rejected():
    assert "multi-task" in error_of(with_change("loss_dict", {}))
    assert error_of(with_change("training.data_dict", {})).startswith("training.data_dict:")


def test_numbers_are_floats_where_floats_expected():
    lr = normalize_input(with_change("learning_rate.start_lr", 1))["learning_rate"]
    assert isinstance(lr["start_lr"], float) and math.isclose(lr["start_lr"], 1.0)
