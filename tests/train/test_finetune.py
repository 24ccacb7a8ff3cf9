"""`deeppot train --finetune`: weights copied and re-indexed by element names, bias re-fitted, refusals, speed-up."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import EXAMPLE_DATA

from deeppot.cli.main import main
from deeppot.config.input import normalize_input
from deeppot.io import save_model
from deeppot.model import EnergyModel
from deeppot.train.finetune import FinetuneError
from deeppot.train.lcurve import read_lcurve
from deeppot.train.trainer import RunOptions, Trainer

PRE_TYPES = ["O", "H", "C"]  # C is never in the data: the fine-tuned type maps are subsets
PRE_SEL = {"O": 16, "H": 32, "C": 4}


def descriptor(type_map: list[str], type_one_side: bool) -> dict:
    return {"type": "se_e2_a", "sel": [PRE_SEL.get(t, 4) for t in type_map], "rcut": 4.0, "rcut_smth": 0.5,
            "neuron": [4, 8], "axis_neuron": 4, "type_one_side": type_one_side, "seed": 1}


def pretrained_model(type_one_side: bool) -> EnergyModel:
    """An O,H,C model with random weights, per-slot davg/dstd and biases: every per-type tensor is distinct."""
    torch.manual_seed(3)
    model = EnergyModel.from_config({"type_map": PRE_TYPES, "descriptor": descriptor(PRE_TYPES, type_one_side),
                                     "fitting_net": {"neuron": [16, 16], "seed": 2}})
    d = model.descriptor
    d.davg.copy_(0.1 * torch.randn_like(d.davg))
    d.dstd.copy_(0.5 + torch.rand_like(d.dstd))
    model.fitting.out_bias.copy_(torch.tensor([-93.0, -187.0, -40.0]))
    return model


def frames(tmp_path: Path, name: str, nframes: int = 6, drop_h: int = 0) -> str:
    """The first frames of the example's data_0; drop_h removes the last hydrogens (another composition)."""
    src = EXAMPLE_DATA / "data_0"
    dst = tmp_path / name
    (dst / "set.000").mkdir(parents=True)
    shutil.copy(src / "type_map.raw", dst / "type_map.raw")
    atype = np.loadtxt(src / "type.raw", dtype=int)
    keep = np.ones(len(atype), bool)
    keep[np.flatnonzero(atype == 1)[len(np.flatnonzero(atype == 1)) - drop_h:]] = False
    np.savetxt(dst / "type.raw", atype[keep], fmt="%d")
    np.save(dst / "set.000" / "box.npy", np.load(src / "set.000" / "box.npy")[:nframes])
    np.save(dst / "set.000" / "energy.npy", np.load(src / "set.000" / "energy.npy")[:nframes])
    for key in ("coord", "force"):
        values = np.load(src / "set.000" / f"{key}.npy")[:nframes].reshape(nframes, -1, 3)[:, keep]
        np.save(dst / "set.000" / f"{key}.npy", values.reshape(nframes, -1))
    return str(dst)


def finetune_input(systems: list[str], type_map: list[str], type_one_side: bool, steps: int = 0) -> dict:
    return {"model": {"type_map": type_map, "descriptor": descriptor(type_map, type_one_side),
                      "fitting_net": {"neuron": [16, 16], "seed": 5}},
            "learning_rate": {"start_lr": 1e-3, "stop_lr": 1e-4, "decay_steps": 2},
            "loss": {"start_pref_e": 0.02, "limit_pref_e": 1, "start_pref_f": 1000, "limit_pref_f": 1},
            "training": {"training_data": {"systems": systems, "batch_size": 1}, "numb_steps": steps, "seed": 7,
                         "disp_freq": 1, "save_freq": 100}}


def trainer(config: dict, workdir: Path, **options) -> Trainer:
    return Trainer(normalize_input(config), RunOptions(workdir=workdir, device=torch.device("cpu"), **options))


@pytest.fixture(params=[True, False], ids=["type_one_side", "two_side"])
def pretrained(request, tmp_path) -> tuple[EnergyModel, Path]:
    model = pretrained_model(request.param)
    path = tmp_path / "pretrained.dp"
    save_model(model, path)
    return model, path


def read_frames(system: str) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray, np.ndarray]:
    path = Path(system)
    names = (path / "type_map.raw").read_text().split()
    atype = np.loadtxt(path / "type.raw", dtype=int)
    coord, box, energy = (np.load(path / "set.000" / f"{k}.npy") for k in ("coord", "box", "energy"))
    return atype, names, coord.reshape(len(energy), -1, 3), box.reshape(-1, 3, 3), energy


def evaluate(model: EnergyModel, system: str) -> dict[str, np.ndarray]:
    """The model's energy and forces on the system's frames, atom types mapped by element names."""
    atype, names, coord, box, _ = read_frames(system)
    model_atype = torch.tensor([model.type_map.index(names[t]) for t in atype])
    with torch.no_grad():
        out = model(torch.from_numpy(coord), model_atype, torch.from_numpy(box))
    return {k: out[k].numpy() for k in ("energy", "force")}


def type_counts(system: str, type_map: list[str]) -> np.ndarray:
    atype, names, coord, _, _ = read_frames(system)
    counts = np.array([np.sum(np.array(names)[atype] == t) for t in type_map], dtype=float)
    return np.tile(counts, (len(coord), 1))


def test_weights_equal_the_pretrained_before_the_first_step(tmp_path, pretrained):
    model, path = pretrained
    system = frames(tmp_path, "train")
    run = trainer(finetune_input([system], PRE_TYPES, model.descriptor.type_one_side), tmp_path, finetune=path)
    fine, source = run.model.state_dict(), model.state_dict()
    for key, value in source.items():
        if key not in ("fitting.out_bias", "min_nbor_dist"):
            torch.testing.assert_close(fine[key], value, rtol=0, atol=0, msg=key)
    assert not torch.equal(fine["fitting.out_bias"], source["fitting.out_bias"])  # re-fitted on the data
    assert run.start_step == 0 and run.lr.value(0) == pytest.approx(1e-3)  # a fresh run, as in DeePMD-kit
    assert all(not s for s in run.optimizer.state.values())


def test_reordered_subset_gives_the_pretrained_energies_up_to_the_bias_change(tmp_path, pretrained):
    model, path = pretrained
    system = frames(tmp_path, "train")
    type_map = ["H", "O"]  # the data are O,H; the pretrained model O,H,C
    run = trainer(finetune_input([system], type_map, model.descriptor.type_one_side), tmp_path, finetune=path)
    # C is kept after input.json's types: dropping its (always empty) neighbour slots would change the descriptor
    assert run.model.type_map == ["H", "O", "C"] and run.model.sel == [PRE_SEL[t] for t in ("H", "O", "C")]
    before, after = evaluate(model, system), evaluate(run.model, system)
    np.testing.assert_allclose(after["force"], before["force"], rtol=0, atol=1e-10)
    delta = run.model.fitting.out_bias.numpy() - model.fitting.out_bias.numpy()[[1, 0, 2]]
    assert delta[2] == 0.0  # no C in the data: its shift is not determined, the min-norm fit leaves it
    np.testing.assert_allclose(after["energy"] - before["energy"], type_counts(system, run.model.type_map) @ delta,
                               rtol=0, atol=1e-8)


def test_bias_change_equals_an_independent_least_squares_fit(tmp_path, pretrained):
    model, path = pretrained
    # two compositions so that both types' shifts are determined (data_stat_nbatch 10 >= 6 frames: all are used)
    systems = [frames(tmp_path, "a"), frames(tmp_path, "b", nframes=5, drop_h=4)]
    type_map = ["H", "O"]
    run = trainer(finetune_input(systems, type_map, model.descriptor.type_one_side), tmp_path, finetune=path)
    counts = np.concatenate([type_counts(s, ["H", "O", "C"]) for s in systems])
    residual = np.concatenate([read_frames(s)[4] - evaluate(model, s)["energy"] for s in systems])
    delta, *_ = np.linalg.lstsq(counts, residual, rcond=None)
    expected = model.fitting.out_bias.numpy()[[1, 0, 2]] + delta
    np.testing.assert_allclose(run.model.fitting.out_bias.numpy(), expected, rtol=1e-10, atol=1e-8)
    assert np.abs(delta).max() > 1.0  # the labels are far from the random model: a real change was tested


def test_differing_hyper_parameters_are_refused_naming_the_keys(tmp_path, pretrained):
    model, path = pretrained
    config = finetune_input([frames(tmp_path, "train")], ["O", "H"], model.descriptor.type_one_side)
    config["model"]["descriptor"].update(rcut=3.5, neuron=[4, 6])
    config["model"]["fitting_net"]["neuron"] = [8]
    with pytest.raises(FinetuneError) as err:
        trainer(copy.deepcopy(config), tmp_path, finetune=path)
    message = str(err.value)
    for key in ("model.descriptor.rcut", "model.descriptor.neuron", "model.fitting_net.neuron",
                "--use-pretrain-script"):
        assert key in message
    assert "model.descriptor.sel" not in message  # sel O,H of O,H,C is the pretrained one re-indexed
    run = trainer(config, tmp_path, finetune=path, use_pretrain_script=True)
    assert run.model.rcut == 4.0 and run.model.descriptor.neuron == [4, 8] and run.model.fitting.neuron == [16, 16]
    assert run.config["model"]["descriptor"]["rcut"] == 4.0  # what out.json records


def test_element_missing_from_the_pretrained_model_is_named(tmp_path, pretrained):
    model, path = pretrained
    config = finetune_input([frames(tmp_path, "train")], ["O", "H", "N"], model.descriptor.type_one_side)
    with pytest.raises(FinetuneError, match=r"element\(s\) N of input.json's type_map"):
        trainer(config, tmp_path, finetune=path)


def test_cli_refusals_are_one_line_errors(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = finetune_input([frames(tmp_path, "train")], ["O", "H"], True, steps=1)
    (tmp_path / "input.json").write_text(json.dumps(config))
    assert main(["train", "input.json", "--finetune", "missing.dp"]) == 1
    assert "pretrained model not found" in capsys.readouterr().err
    assert main(["train", "input.json", "--use-pretrain-script"]) == 1
    assert "--use-pretrain-script goes with --finetune" in capsys.readouterr().err


def test_cli_finetunes_a_checkpoint_and_logs_the_bias_change(tmp_path, caplog, monkeypatch):
    """A deeppot .pt checkpoint as the pretrained model, through the command line, with a reordered type map."""
    monkeypatch.chdir(tmp_path)
    system = frames(tmp_path, "train")
    pre = finetune_input([system], ["O", "H"], True, steps=2)
    (tmp_path / "pre").mkdir()
    (tmp_path / "pre" / "input.json").write_text(json.dumps(pre))
    monkeypatch.chdir(tmp_path / "pre")
    assert main(["train", "input.json"]) == 0
    monkeypatch.chdir(tmp_path)
    fine = finetune_input([system], ["H", "O"], True, steps=2)
    (tmp_path / "input.json").write_text(json.dumps(fine))
    caplog.set_level("INFO", logger="deeppot")
    caplog.clear()
    assert main(["train", "input.json", "--finetune", "pre/model.ckpt.pt"]) == 0
    out = "\n".join(r.getMessage() for r in caplog.records)
    assert "fine-tuning type map: input.json ['H', 'O'] -> model ['H', 'O'] (pretrained type indices [1, 0])" in out
    assert "Change output bias of ['H', 'O'] from" in out
    assert [int(s) for s in read_lcurve(tmp_path / "lcurve.out")["step"]] == [1, 2]  # the step counter is fresh


@pytest.mark.slow
def test_finetuning_converges_faster_than_training_from_scratch(tmp_path):
    """Pretrain 1000 steps on water (data_0..2), then 40 steps on 4 frames of data_3, pretrained vs scratch."""
    tiny = {"type_map": ["O", "H"], "descriptor": descriptor(["O", "H"], True), "fitting_net": {"neuron": [16, 16]}}
    loss = {"start_pref_e": 0.02, "limit_pref_e": 1, "start_pref_f": 1000, "limit_pref_f": 1}
    pre = {"model": copy.deepcopy(tiny), "loss": loss,
           "learning_rate": {"start_lr": 2e-3, "stop_lr": 5e-4},
           "training": {"training_data": {"systems": [str(EXAMPLE_DATA / f"data_{i}") for i in range(3)],
                                          "batch_size": 1},
                        "numb_steps": 1000, "seed": 1, "disp_freq": 500, "save_freq": 1000}}
    trainer(pre, tmp_path / "pre").run()
    few = frames_of(tmp_path, EXAMPLE_DATA / "data_3", "few", slice(0, 4))
    valid = frames_of(tmp_path, EXAMPLE_DATA / "data_3", "valid", slice(40, 80))
    results = {}
    for name, options in (("scratch", {}), ("finetune", {"finetune": tmp_path / "pre" / "model.ckpt.pt"})):
        config = {"model": copy.deepcopy(tiny), "loss": loss, "learning_rate": {"start_lr": 1e-3, "stop_lr": 5e-4},
                  "training": {"training_data": {"systems": [few], "batch_size": 1},
                               "validation_data": {"systems": [valid], "batch_size": 1, "numb_btch": 10},
                               "numb_steps": 40, "seed": 2, "disp_freq": 40, "save_freq": 40}}
        trainer(config, tmp_path / name, **options).run()
        results[name] = read_lcurve(tmp_path / name / "lcurve.out")["rmse_f_val"][-1]
    # measured (CPU, ~20 s in all): force RMSE 0.31 eV/Å fine-tuned vs 0.82 from scratch after 40 steps
    assert results["finetune"] < 0.6 * results["scratch"], results


def frames_of(tmp_path: Path, src: Path, name: str, cut: slice) -> str:
    dst = tmp_path / name
    (dst / "set.000").mkdir(parents=True)
    for f in ("type.raw", "type_map.raw"):
        shutil.copy(src / f, dst / f)
    for key in ("coord", "box", "energy", "force"):
        np.save(dst / "set.000" / f"{key}.npy", np.load(src / "set.000" / f"{key}.npy")[cut])
    return str(dst)
