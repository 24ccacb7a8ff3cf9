"""`normalize_input` on real inputs, legacy conversions, and the input/out.json files (spec §2, §9.7)."""

from __future__ import annotations

import copy
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import minimal_input

from deeppot.config.input import (
    compat_input,
    data_path,
    load_input,
    normalize_input,
    resolve_data_paths,
    write_out_json,
)
from deeppot.config.schema import ConfigError

BENCH_INPUTS = Path(__file__).resolve().parents[3] / "shared" / "bench" / "inputs"
BENCH_FILES = sorted(BENCH_INPUTS.glob("*.json")) if BENCH_INPUTS.is_dir() else []
needs_bench = pytest.mark.skipif(not BENCH_FILES, reason="/work/shared/bench/inputs is absent")

# every key DeePMD-kit 3.2 fills with a default (argcheck), per section; the model section is tested elsewhere
FILLED = {
    "learning_rate": {"start_lr", "stop_lr", "stop_lr_ratio", "warmup_steps", "warmup_ratio", "warmup_start_factor",
                      "scale_by_worker", "type", "decay_steps", "decay_rate", "smooth"},
    "loss": {"type", "use_default_pf", "enable_atom_ener_coeff", "numb_generalized_coord", "use_huber", "loss_func",
             "f_use_norm", "huber_delta", "intensive_ener_virial"}
    | {f"{s}_pref_{t}" for s in ("start", "limit") for t in ("e", "f", "v", "h", "ae", "pf", "gf")},
    "optimizer": {"type", "adam_beta1", "adam_beta2", "weight_decay"},
    "training": {"training_data", "validation_data", "stat_file_mode", "disp_file", "disp_freq", "save_freq",
                 "save_dir", "save_ckpt", "max_ckpt_keep", "ckpt_keep_ratio", "enable_ema", "ema_decay",
                 "ema_ckpt_keep", "change_bias_after_training", "disp_training", "time_training", "disp_avg",
                 "profiling", "profiling_file", "enable_profiler", "tensorboard", "tensorboard_log_dir",
                 "tensorboard_freq", "acc_freq", "zero_stage", "neighbor_graph_method", "enable_compile",
                 "enable_tf32"},
}
DATA_FILLED = {"systems", "rglob_patterns", "batch_size", "auto_prob", "sys_probs"}


@needs_bench
@pytest.mark.parametrize("path", BENCH_FILES, ids=lambda p: p.name)
def test_bench_inputs_normalise_with_every_default(path):
    raw = json.loads(path.read_text())
    out = json.loads(json.dumps(normalize_input(raw)))  # survives a JSON round trip unchanged
    assert out == normalize_input(raw)
    assert list(out) == ["model", "learning_rate", "loss", "training", "optimizer", "validating"]
    for section, keys in FILLED.items():
        assert keys <= set(out[section]), (section, keys - set(out[section]))
    assert DATA_FILLED | {"min_pair_dist"} <= set(out["training"]["training_data"])
    assert DATA_FILLED | {"numb_btch"} <= set(out["training"]["validation_data"])
    assert normalize_input(out) == out  # idempotent: out.json is itself a valid input (e.g. for a restart)
    # given values are kept
    assert out["training"]["numb_steps"] == raw["training"]["numb_steps"]
    assert out["learning_rate"]["stop_lr"] == raw["learning_rate"]["stop_lr"]
    assert out["training"]["validation_data"]["numb_btch"] == raw["training"]["validation_data"]["numb_btch"]


@needs_bench
@pytest.mark.parametrize("path", [p for p in BENCH_FILES if p.name.startswith(("water", "alloy"))],
                         ids=lambda p: p.name)  # alloy trains virials, water does not; DeePMD's check is slow
def test_bench_inputs_match_deepmd_normalisation(path):
    argcheck = pytest.importorskip("deepmd.utils.argcheck")
    compat = pytest.importorskip("deepmd.utils.compat")
    raw = json.loads(path.read_text())
    variants = [raw, _legacy_variant(raw)]
    for config in variants:
        theirs = argcheck.normalize(compat.update_deepmd_input(copy.deepcopy(config), warning=False))
        ours = normalize_input(config)
        for section in ("learning_rate", "loss", "optimizer", "training", "validating"):
            assert ours[section] == theirs[section], section


@needs_bench
@pytest.mark.parametrize("path", BENCH_FILES, ids=lambda p: p.name)
def test_compat_input_is_deepmd_dump(path, tmp_path):
    """input_v2_compat.json: what DeePMD-kit's `update_deepmd_input` dumps, for the v2 input and its v1 variant."""
    compat = pytest.importorskip("deepmd.utils.compat")
    raw = json.loads(path.read_text())
    for config in (raw, _legacy_variant(raw)):
        compat.update_deepmd_input(copy.deepcopy(config), warning=False, dump=tmp_path / "theirs.json")
        write_out_json(compat_input(config), tmp_path / "ours.json")
        assert (tmp_path / "ours.json").read_text() == (tmp_path / "theirs.json").read_text()


def _legacy_variant(raw: dict[str, Any]) -> dict[str, Any]:
    """The same input in the v1 layout with legacy keys in `training`."""
    config = copy.deepcopy(raw)
    training = config["training"]
    data = training.pop("training_data")
    training.update(systems=data["systems"], batch_size=data["batch_size"], stop_batch=training.pop("numb_steps"),
                    numb_test=10, opt_type="AdamW", adam_beta2=0.99, warmup_steps=100)
    config["learning_rate"] = {"type": "exp", "start_lr": 1e-3, "decay_steps": 5000, "decay_rate": 0.95}
    return config


def test_legacy_v1_conversion():
    config = minimal_input()
    config["training"] = {"systems": ["a", "b"], "batch_size": 2, "stop_batch": 20000, "numb_test": 5,
                          "sys_weights": [0.5, 0.5]}
    config["learning_rate"] = {"start_lr": 1e-3, "decay_steps": 1000, "decay_rate": 0.9}
    out = normalize_input(config)
    data = out["training"]["training_data"]
    assert data["systems"] == ["a", "b"] and data["batch_size"] == 2 and data["sys_probs"] == [0.5, 0.5]
    assert "numb_test" not in out["training"] and out["training"]["numb_steps"] == 20000
    # stop_lr = start_lr · decay_rate^(numb_steps / decay_steps) = 1e-3 · 0.9^20
    assert math.isclose(out["learning_rate"]["stop_lr"], 1e-3 * 0.9**20, rel_tol=1e-12)
    assert out["learning_rate"]["decay_rate"] is None


def test_legacy_v1_and_v2_layouts_together_rejected():
    config = minimal_input()
    config["training"]["systems"] = ["a"]
    with pytest.raises(ConfigError, match=r"^training\.systems: .*training_data"):
        normalize_input(config)


def test_v2_decay_rate_is_kept():
    config = minimal_input()
    config["learning_rate"]["decay_rate"] = 0.95
    lr = normalize_input(config)["learning_rate"]
    assert lr["decay_rate"] == 0.95 and lr["stop_lr"] == 5e-8


def test_numb_test_dropped_in_v2_layout():
    config = minimal_input()
    config["training"]["numb_test"] = 4
    assert "numb_test" not in normalize_input(config)["training"]


def test_legacy_opt_type_moves_to_optimizer():
    config = minimal_input()
    config["training"].update(opt_type="AdamW", adam_beta1=0.8, weight_decay=0.01)
    out = normalize_input(config)
    assert out["optimizer"] == {"type": "AdamW", "adam_beta1": 0.8, "weight_decay": 0.01, "adam_beta2": 0.999}
    assert not {"opt_type", "adam_beta1", "weight_decay"} & set(out["training"])


def test_legacy_optimizer_key_wins_over_optimizer_section():
    config = minimal_input()
    config["optimizer"] = {"type": "Adam", "adam_beta1": 0.7}
    config["training"]["adam_beta1"] = 0.8
    assert normalize_input(config)["optimizer"]["adam_beta1"] == 0.8


def test_legacy_warmup_keys_move_to_learning_rate():
    config = minimal_input()
    config["training"].update(warmup_steps=10, warmup_start_factor=0.1)
    out = normalize_input(config)
    assert out["learning_rate"]["warmup_steps"] == 10 and out["learning_rate"]["warmup_start_factor"] == 0.1
    assert "warmup_steps" not in out["training"]


def test_legacy_warmup_conflict():
    config = minimal_input()
    config["training"]["warmup_steps"] = 10
    config["learning_rate"]["warmup_steps"] = 20
    with pytest.raises(ConfigError, match=r"^training\.warmup_steps: also given in learning_rate"):
        normalize_input(config)


def test_legacy_v0_layout():
    v0 = {"use_smooth": True, "sel_a": [4, 8], "rcut": 4.0, "rcut_smth": 0.5, "filter_neuron": [4, 8],
          "n_axis_neuron": 2, "fitting_neuron": [8], "start_lr": 1e-3, "decay_steps": 100, "decay_rate": 0.5,
          "stop_batch": 1000, "systems": ["a"], "batch_size": 1, "numb_test": 1, "disp_freq": 10,
          "start_pref_e": 0.1, "limit_pref_e": 1, "start_pref_f": 100, "limit_pref_f": 1, "seed": 3}
    with pytest.raises(ConfigError, match=r"^model\.type_map: required"):
        normalize_input(v0)  # v0 had no type_map; deeppot's model needs one
    out = normalize_input({**v0, "type_map": ["O", "H"]})
    descriptor, fitting = out["model"]["descriptor"], out["model"]["fitting_net"]
    assert descriptor["sel"] == [4, 8] and descriptor["neuron"] == [4, 8] and descriptor["axis_neuron"] == 2
    assert descriptor["seed"] == 3 and descriptor["resnet_dt"] is False
    assert fitting["neuron"] == [8] and fitting["resnet_dt"] is True
    training = out["training"]
    assert training["training_data"]["systems"] == ["a"] and training["training_data"]["batch_size"] == 1
    assert training["numb_steps"] == 1000 and training["disp_freq"] == 10 and training["seed"] == 3
    assert "numb_test" not in training
    # stop_lr = 1e-3 · 0.5^(1000/100)
    assert math.isclose(out["learning_rate"]["stop_lr"], 1e-3 * 0.5**10, rel_tol=1e-12)
    assert out["loss"]["start_pref_f"] == 100 and out["loss"]["start_pref_e"] == 0.1


def test_legacy_v0_non_smooth_rejected():
    with pytest.raises(ConfigError, match=r"^use_smooth: .*not supported"):
        normalize_input({"use_smooth": False, "sel_a": [4]})


def test_top_level_must_be_an_object():
    with pytest.raises(ConfigError, match=r"^input: expected a JSON object"):
        normalize_input([1, 2])  # type: ignore[arg-type]


# files -----------------------------------------------------------------------------------------------------------


def test_load_input_reads_json(tmp_path):
    path = tmp_path / "input.json"
    path.write_text(json.dumps(minimal_input()))
    assert load_input(path) == minimal_input()


def test_load_input_syntax_error_names_file_line_and_column(tmp_path):
    path = tmp_path / "input.json"
    path.write_text('{\n  "model": {},\n  "training": {"numb_steps": 10,}\n}\n')
    with pytest.raises(ConfigError) as info:
        load_input(path)
    message = str(info.value)
    assert message.startswith(f"{path}: invalid JSON at line 3, column 33")  # the "}" after the comma


def test_load_input_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_input(tmp_path / "nope.json")


def test_write_out_json_atomic_indent4(tmp_path):
    config = normalize_input(minimal_input())
    path = tmp_path / "out.json"
    path.write_text("old content")
    write_out_json(config, path)
    text = path.read_text()
    assert text == json.dumps(config, indent=4)
    assert text.startswith('{\n    "model": {\n        "type_map"')
    assert json.loads(text) == config
    assert sorted(os.listdir(tmp_path)) == ["out.json"]  # no temporary file left behind


def test_write_out_json_failure_leaves_old_file(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("old")
    with pytest.raises(TypeError):
        write_out_json({"bad": object()}, path)
    assert path.read_text() == "old" and sorted(os.listdir(tmp_path)) == ["out.json"]


def test_data_paths_from_here_else_beside_input_json(tmp_path, monkeypatch):
    """A system found from the working directory stays; one found only beside input.json is taken from there
    (for `file.h5#/group` the file decides); one found nowhere is left for the data loader's error."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here").mkdir()
    (tmp_path / "run" / "here").mkdir(parents=True)
    (tmp_path / "run" / "beside").mkdir()
    (tmp_path / "run" / "data.h5").write_bytes(b"")
    run = tmp_path / "run"
    assert data_path("here", run) == "here"
    assert data_path("beside", run) == str(run / "beside")
    assert data_path("data.h5#/sys0", run) == str(run / "data.h5#/sys0")
    assert data_path("nowhere", run) == "nowhere"
    assert data_path("here", run, input_first=True) == str(run / "here")  # `dp test --train-data`'s order
    assert data_path("beside", run, input_first=True) == str(run / "beside")
    assert data_path("nowhere", run, input_first=True) == "nowhere"
    config = {"training": {"training_data": {"systems": ["here", "beside"]}, "validation_data": {"systems": "beside"}}}
    resolve_data_paths(config, run)
    assert config["training"]["training_data"]["systems"] == ["here", str(run / "beside")]
    assert config["training"]["validation_data"]["systems"] == str(run / "beside")
