"""The training loop end to end on small copies of the water example."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import EXAMPLE_DATA

from deeppot.config.input import normalize_input
from deeppot.data import load_systems
from deeppot.model import PairData
from deeppot.nlist import build_neighbor_data
from deeppot.train.data import FrameStore
from deeppot.train.lcurve import read_lcurve
from deeppot.train.trainer import RunOptions, Trainer, TrainingError


def tiny_input(train: list[str], valid: list[str] | None, steps: int = 6, precision: str = "float64",
               virial: bool = False) -> dict:
    config = {
        "model": {
            "type_map": ["O", "H"],
            "descriptor": {"type": "se_e2_a", "sel": [16, 32], "rcut": 4.0, "rcut_smth": 0.5, "neuron": [4, 8],
                           "axis_neuron": 4, "type_one_side": True, "precision": precision, "seed": 1},
            "fitting_net": {"neuron": [16, 16], "precision": precision, "seed": 1},
        },
        "learning_rate": {"start_lr": 1e-3, "stop_lr": 1e-4, "decay_steps": 2},
        "loss": {"start_pref_e": 0.02, "limit_pref_e": 1, "start_pref_f": 1000, "limit_pref_f": 1,
                 "start_pref_v": 0.1 if virial else 0, "limit_pref_v": 1 if virial else 0},
        "training": {"training_data": {"systems": train, "batch_size": 1},
                     "numb_steps": steps, "seed": 7, "disp_freq": 2, "save_freq": 3},
    }
    if valid:
        config["training"]["validation_data"] = {"systems": valid, "batch_size": 1, "numb_btch": 2}
    return config


def small_system(tmp_path: Path, name: str, nframes: int = 6, virial: bool = False) -> str:
    """The first frames of the example's data_0 (optionally with made-up virial labels)."""
    src = EXAMPLE_DATA / "data_0"
    dst = tmp_path / name
    (dst / "set.000").mkdir(parents=True)
    for f in ("type.raw", "type_map.raw"):
        shutil.copy(src / f, dst / f)
    for key in ("coord", "box", "energy", "force"):
        np.save(dst / "set.000" / f"{key}.npy", np.load(src / "set.000" / f"{key}.npy")[:nframes])
    if virial:
        rng = np.random.default_rng(0)
        np.save(dst / "set.000" / "virial.npy", rng.normal(size=(nframes, 9)))
    return str(dst)


def run(config: dict, workdir: Path, **options) -> Trainer:
    trainer = Trainer(normalize_input(config), RunOptions(workdir=workdir, device=torch.device("cpu"), **options))
    trainer.run()
    return trainer


@pytest.fixture
def systems(tmp_path):
    return [small_system(tmp_path, "train")], [small_system(tmp_path, "valid", nframes=3)]


def test_lcurve_layout_energy_force(tmp_path, systems):
    run(tiny_input(*systems), tmp_path)
    lines = (tmp_path / "lcurve.out").read_text().splitlines()
    assert lines[0] == ("# step       rmse_val    rmse_trn    rmse_e_val  rmse_e_trn    rmse_f_val  rmse_f_trn"
                        "   lr      ")
    assert lines[1] == "# If there is no available reference data, rmse_*_{val,trn} will print nan"
    assert [int(line.split()[0]) for line in lines[2:]] == [1, 2, 4, 6]


def test_lcurve_layout_with_virial_without_validation(tmp_path):
    train = [small_system(tmp_path, "train", virial=True)]
    run(tiny_input(train, None, virial=True), tmp_path)
    header = (tmp_path / "lcurve.out").read_text().splitlines()[0].split()
    assert header == ["#", "step", "rmse_trn", "rmse_e_trn", "rmse_f_trn", "rmse_v_trn", "lr"]


def test_step_one_metrics_equal_direct_loss(tmp_path, systems):
    config = tiny_input(*systems)
    fresh = Trainer(normalize_input(copy.deepcopy(config)),
                    RunOptions(workdir=tmp_path / "probe", device=torch.device("cpu")))
    batch = fresh.train_data.next()  # the same seed draws the same first batch
    pred = fresh.model.forward_pairs(batch.pairs)
    _, metrics = fresh.loss(pred, batch.labels, batch.find, batch.natoms, 1e-3)
    expected = fresh.loss.display(metrics)
    run(config, tmp_path)
    first = {k: v[0] for k, v in read_lcurve(tmp_path / "lcurve.out").items()}
    for key in ("rmse", "rmse_e", "rmse_f"):
        assert first[f"{key}_trn"] == pytest.approx(expected[key], rel=6e-3)  # lcurve keeps 3 digits
    assert first["lr"] == pytest.approx(1e-3)


def test_training_lowers_validation_force_error(tmp_path):
    train = [str(EXAMPLE_DATA / "data_0")]
    valid = [str(EXAMPLE_DATA / "data_3")]
    config = tiny_input(train, valid, steps=200)
    config["model"]["descriptor"]["neuron"] = [8, 16]
    config["learning_rate"] = {"start_lr": 2e-3, "stop_lr": 1e-3}
    config["training"].update(disp_freq=50, save_freq=200)
    config["training"]["validation_data"]["numb_btch"] = 4
    run(config, tmp_path)
    curve = read_lcurve(tmp_path / "lcurve.out")
    # measured: 0.83 -> 0.50 eV/Å in 200 steps; an untrained or mis-signed force term stays near 0.83
    assert curve["rmse_f_val"][-1] < 0.75 * curve["rmse_f_val"][0]


def test_restart_continues_bit_for_bit(tmp_path, systems, monkeypatch):
    """6 steps in one run equal a run killed after step 4 (last checkpoint at 3) restarted from that checkpoint."""
    config = tiny_input(*systems, steps=6)
    config["training"]["disp_freq"] = 1
    full = run(copy.deepcopy(config), tmp_path / "full")
    part_dir = tmp_path / "part"
    killed = Trainer(normalize_input(copy.deepcopy(config)), RunOptions(workdir=part_dir, device=torch.device("cpu")))
    real_step = killed.step

    def step_then_die(step):
        if step == 4:
            raise KeyboardInterrupt  # the run is killed during step 5
        return real_step(step)

    monkeypatch.setattr(killed, "step", step_then_die)
    with pytest.raises(KeyboardInterrupt):
        killed.run()
    resumed = run(copy.deepcopy(config), part_dir, restart=part_dir / "model.ckpt-3.pt")
    for p_full, p_resumed in zip(full.model.parameters(), resumed.model.parameters(), strict=True):
        torch.testing.assert_close(p_resumed, p_full, rtol=1e-13, atol=1e-15)
    whole = [line for line in (tmp_path / "full" / "lcurve.out").read_text().splitlines()]
    pieces = (part_dir / "lcurve.out").read_text().splitlines()
    assert sum(line.startswith("# step") for line in pieces) == 2  # the restart repeats the header
    data = [line for line in pieces if not line.startswith("#")]
    # steps 1-4 from the killed run, then 4-6 again from the restart: the overlap is identical
    assert data == whole[2:6] + whole[5:]


def test_checkpoints_pointer_and_retention(tmp_path, systems):
    config = tiny_input(*systems, steps=9)
    config["training"].update(save_freq=2, max_ckpt_keep=2)
    run(config, tmp_path)
    numbered = sorted(p.name for p in tmp_path.glob("model.ckpt-*.pt"))
    assert numbered == ["model.ckpt-8.pt", "model.ckpt-9.pt"]
    assert (tmp_path / "checkpoint").read_text().strip() == "model.ckpt-9.pt"
    assert (tmp_path / "model.ckpt.pt").resolve() == (tmp_path / "model.ckpt-9.pt").resolve()


def test_nan_loss_stops_and_keeps_last_checkpoint(tmp_path, systems, monkeypatch):
    config = tiny_input(*systems, steps=8)
    trainer = Trainer(normalize_input(config), RunOptions(workdir=tmp_path, device=torch.device("cpu")))
    real_step = trainer.step

    def poisoned(step):
        metrics = real_step(step)
        if step >= 4:  # from step 5 on the loss "diverges"
            metrics["rmse"] = torch.tensor(float("nan"), dtype=torch.float64)
        return metrics

    monkeypatch.setattr(trainer, "step", poisoned)
    with pytest.raises(TrainingError, match=r"NaN detected at batch 6.*model\.ckpt-3\.pt"):
        trainer.run()
    assert sorted(p.name for p in tmp_path.glob("model.ckpt-*.pt")) == ["model.ckpt-3.pt"]


def test_an_optimizer_that_writes_behind_torch_is_told_after_the_run(tmp_path, systems):
    """FlatAdam (a GPU's optimizer) writes the weights through a flat buffer, behind their version counters, which
    the inference kernels' caches read: the run calls its `mark_updated` once, after the last step."""
    trainer = Trainer(normalize_input(tiny_input(*systems, steps=3)),
                      RunOptions(workdir=tmp_path, device=torch.device("cpu")))
    events, real_step = [], trainer.step
    trainer.optimizer.mark_updated = lambda: events.append("marked")

    def step(n):
        events.append(n)
        return real_step(n)

    trainer.step = step
    trainer.run()
    assert events == [0, 1, 2, "marked"]


def test_saving_reads_the_loss_before_validation(tmp_path, systems, monkeypatch):
    """A step replayed from a CUDA graph returns metrics that the next replay of any graph may overwrite (the graphs
    share a memory pool), validation's included: a save after a display must not read them again. Here validation
    overwrites them as a replay can (run 63: an alloy run stopped at its last step on a loss it had written as
    finite)."""
    trainer = Trainer(normalize_input(tiny_input(*systems, steps=4)), RunOptions(workdir=tmp_path,
                                                                                device=torch.device("cpu")))
    real_step, real_validate = trainer.step, trainer._validate
    last = {}

    def step(i):
        last.update(real_step(i))
        return last

    def validate(lr):
        out = real_validate(lr)
        for value in last.values():
            value.fill_(float("nan"))
        return out

    monkeypatch.setattr(trainer, "step", step)
    monkeypatch.setattr(trainer, "_validate", validate)
    trainer.run()
    assert (tmp_path / "model.ckpt-4.pt").exists()


def test_numb_epoch_sets_the_number_of_steps(tmp_path, systems):
    config = tiny_input(*systems)
    del config["training"]["numb_steps"]
    config["training"]["numb_epoch"] = 1.5  # one system of 6 frames, batch 1: 6 batches per epoch
    trainer = Trainer(normalize_input(config), RunOptions(workdir=tmp_path, device=torch.device("cpu")))
    assert trainer.numb_steps == 9


def test_trimmed_lists_train_as_the_full_lists(tmp_path, systems):
    """Lists trimmed to the data's most neighbours (deeppot.model.slots): the same weights after the run."""
    config = tiny_input(*systems)
    full = run(copy.deepcopy(config), tmp_path / "full", trim_lists=False)
    trim = run(copy.deepcopy(config), tmp_path / "trim")
    (store,), (full_store,) = trim.train_data.stores, full.train_data.stores
    assert full_store.widths is None and trim.valid_data.stores[0].widths == store.widths
    assert store.rij.shape[2] == sum(store.layout.sel) < full_store.rij.shape[2] == 48
    assert trim.model.sel == full.model.sel == [16, 32]
    for key, value in full.model.state_dict().items():
        torch.testing.assert_close(trim.model.state_dict()[key], value, rtol=1e-9, atol=1e-12, msg=key)


def test_store_refuses_to_drop_a_neighbour(systems):
    system = load_systems(systems[0], ["O", "H"])
    store = FrameStore(system, 4.0, [16, 32], torch.device("cpu"), widths=(2, 32))
    with pytest.raises(ValueError, match=r"train: frame \d+ has more neighbours than the lists' widths \[2, 32\]"):
        store.build_all()


def test_store_gathers_each_frames_labels_and_flags(tmp_path):
    """Two systems in one store, one with virial labels: a batch holds its frames' pair data (as the neighbour
    builder gives it for those frames), labels in their shapes and the flags of its system (everything is packed
    in one row per frame and gathered at once)."""
    paths = [small_system(tmp_path, "plain", nframes=3), small_system(tmp_path, "virial", nframes=4, virial=True)]
    systems = load_systems(paths, ["O", "H"])
    store = FrameStore(systems, 4.0, [16, 32], torch.device("cpu"))
    store.build_all()
    for frames, system, local in (([1, 0], systems[0], [1, 0]), ([5, 3, 6], systems[1], [2, 0, 3])):
        batch = store.gather(torch.tensor(frames))
        atype = torch.as_tensor(system.atype)[None].expand(len(local), -1)
        nd = build_neighbor_data(torch.as_tensor(system.coord[local]), atype, torch.as_tensor(system.box[local]),
                                 4.0, [16, 32])
        built = PairData.from_neighbors(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping, 4.0)
        for name in ("rij", "nlist_loc", "neighbor_type"):
            assert torch.equal(getattr(batch.pairs, name), getattr(built, name)), name
        for key, value in batch.labels.items():
            assert torch.equal(value, torch.as_tensor(system.labels[key][local])), key
        assert {k: float(v) for k, v in batch.find.items()} == {k: float(system.find[k]) for k in batch.find}
    assert float(store.gather(torch.tensor([4])).find["virial"]) == 1.0
    assert float(store.gather(torch.tensor([2])).find["virial"]) == 0.0
