"""Data-parallel training on 2 CPU ranks (gloo): gradient averaging, rank-0-only files, scale_by_worker, restart."""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from dist_helpers import lr_scales, run_options, spawn, tiny_ddp_input, train_and_dump
from helpers import EXAMPLE_DATA

from deeppot.config.input import normalize_input
from deeppot.data import load_systems
from deeppot.train import distributed
from deeppot.train.data import DataSampler
from deeppot.train.graph_step import batch_shapes
from deeppot.train.lcurve import read_lcurve
from deeppot.train.trainer import Trainer

ROOT = Path(__file__).resolve().parents[2]
CPU = torch.device("cpu")


@pytest.mark.parametrize("world_size", [1, 2, 3, 8])
def test_lr_scale_is_deepmd_tf_formula(world_size):
    assert distributed.lr_scale("linear", world_size) == float(world_size)
    assert distributed.lr_scale("sqrt", world_size) == math.sqrt(world_size)
    assert distributed.lr_scale("none", world_size) == 1.0


def test_one_process_does_not_touch_torch_distributed(monkeypatch):
    for value in (None, "1"):
        if value is None:
            monkeypatch.delenv("WORLD_SIZE", raising=False)
        else:
            monkeypatch.setenv("WORLD_SIZE", value)
        info, device = distributed.from_env(None)
        assert (info, device) == (distributed.DistInfo(), None)
    assert not dist.is_initialized()


def _replay_mean_gradient(config: dict, workdir: Path, steps: int) -> list[torch.Tensor]:
    """One process doing what 2 ranks should: rank 0's and rank 1's batches, the mean of their gradients, and
    the optimizer's rate scaled by 2 (scale_by_worker "linear")."""
    single = Trainer(normalize_input(copy.deepcopy(config)), run_options(workdir, CPU))
    rank1 = copy.deepcopy(single.train_data)
    rank1.reseed(distributed.rank_seed(config["training"]["seed"], distributed.DistInfo(1, 2, 1)))
    params = list(single.model.parameters())
    for step in range(steps):
        lr = single.lr.value(step)
        grads = []
        for sampler in (single.train_data, rank1):
            batch = sampler.next()
            pred = single.model.forward_pairs(batch.pairs, create_graph=True)
            loss, _ = single.loss(pred, batch.labels, batch.find, batch.natoms, lr)
            grads.append(torch.autograd.grad(loss, params, allow_unused=True))
        for p, g0, g1 in zip(params, *grads, strict=True):
            p.grad = ((torch.zeros_like(p) if g0 is None else g0) + (torch.zeros_like(p) if g1 is None else g1)) / 2
        for group in single.optimizer.param_groups:
            group["lr"] = 2 * lr
        single.optimizer.step()
    return [p.detach() for p in params]


def test_two_ranks_average_gradients_and_only_rank0_writes(tmp_path):
    steps = 3
    config = tiny_ddp_input(steps=steps)
    spawn(train_and_dump, 2, config, str(tmp_path))
    rank0, rank1 = (torch.load(tmp_path / f"weights{r}.pt") for r in (0, 1))
    for a, b in zip(rank0["params"], rank1["params"], strict=True):
        assert torch.equal(a, b)  # every rank applied the same (averaged) update
    restored = Trainer(normalize_input(copy.deepcopy(config)),  # rank 0's checkpoint holds those weights
                       run_options(tmp_path / "probe", CPU,
                                  restart=tmp_path / "rank0" / f"model.ckpt-{steps}.pt"))
    for got, want in zip(restored.model.parameters(), rank1["params"], strict=True):
        assert torch.equal(got.detach(), want)
    expected = _replay_mean_gradient(config, tmp_path / "replay", steps)
    for got, want in zip(rank0["params"], expected, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-14)
    assert sorted(p.name for p in (tmp_path / "rank1").iterdir()) == []  # rank 1 wrote nothing
    written = {p.name for p in (tmp_path / "rank0").iterdir()}
    assert {"lcurve.out", f"model.ckpt-{steps}.pt", "checkpoint"} <= written
    assert rank0["lr_scale"] == 2.0


def test_scale_by_worker_each_value(tmp_path):
    spawn(lr_scales, 2, str(tmp_path))
    found = torch.load(tmp_path / "lr_scales.pt")
    coef = {"linear": 2.0, "sqrt": math.sqrt(2.0), "none": 1.0}
    for mode, (optimizer_lr, schedule_lr) in found.items():
        assert optimizer_lr == pytest.approx(schedule_lr * coef[mode], rel=1e-15)
    # lcurve.out shows the schedule's rate (as DeePMD TF), not the scaled one
    assert read_lcurve(tmp_path / "linear" / "rank0" / "lcurve.out")["lr"][0] == pytest.approx(1e-3)


def test_torchrun_restart_with_a_different_number_of_ranks(tmp_path):
    """1 process to step 2, torchrun with 2 ranks to step 4 (CLI), then 1 process again to step 6."""
    config = tiny_ddp_input(steps=2)
    config["training"]["save_freq"] = 2
    Trainer(normalize_input(copy.deepcopy(config)), run_options(tmp_path, CPU)).run()
    config["training"]["numb_steps"] = 4
    (tmp_path / "input.json").write_text(json.dumps(config))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "deeppot", "train", "input.json", "--device", "cpu",
           "--skip-neighbor-stat", "--restart", "model.ckpt-2.pt"]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Scale learning rate by coef: 2.0" in done.stdout
    lines = (tmp_path / "lcurve.out").read_text().splitlines()
    steps = [int(line.split()[0]) for line in lines if not line.startswith("#")]
    assert steps == [1, 2, 3, 4]  # rank 1 appended nothing
    assert (tmp_path / "out.json").is_file() and (tmp_path / "model.ckpt-4.pt").is_file()
    config["training"]["numb_steps"] = 6
    resumed = Trainer(normalize_input(copy.deepcopy(config)),
                      run_options(tmp_path, CPU, restart=tmp_path / "model.ckpt-4.pt"))
    resumed.run()
    assert resumed.start_step == 4 and (tmp_path / "model.ckpt-6.pt").is_file()


def test_graph_shapes_cover_every_batch_the_sampler_draws():
    """The CUDA graphs that capture_all records up front must include every batch shape a rank can draw
    (checked on the CPU: the shapes come from the sampler alone; no neighbour data is built)."""
    systems = load_systems([str(EXAMPLE_DATA / f"data_{i}") for i in range(3)], ["O", "H"])
    sampler = DataSampler(systems, 4.0, [16, 32], CPU, [3, 7, 100], None, "prob_uniform", seed=3)
    shapes = {(store_id, len(frames)) for store_id, frames in batch_shapes(sampler)}
    drawn = set()
    for _ in range(300):  # DataSampler.next_index without building the frames
        k = int(sampler.rng.choice(len(sampler.systems), p=sampler.probs))
        drawn.add((sampler.where[k][0], len(next(sampler.samplers[k]))))
    assert drawn == shapes  # short end-of-epoch batches included, nothing captured in vain


@pytest.mark.parametrize(("world_size", "accum", "expected"), [(1, 1, 120), (2, 1, 60), (3, 1, 41), (2, 2, 30)])
def test_numb_epoch_counts_per_rank_batches(world_size, accum, expected):
    """80 frames, batch 1: a rank sees ceil(80 / N) frames per epoch (as DeePMD's DistributedSampler), and each
    step draws grad_accum_steps batches; numb_epoch 1.5."""
    from types import SimpleNamespace

    systems = load_systems([str(EXAMPLE_DATA / "data_0")], ["O", "H"])
    sampler = DataSampler(systems, 4.0, [16, 32], CPU, 1, None, "prob_sys_size", seed=3)
    training = {"numb_epoch": 1.5, "grad_accum_steps": accum}
    fake = SimpleNamespace(config={"training": training}, train_data=sampler,
                           opt=SimpleNamespace(dist=distributed.DistInfo(0, world_size, 0)))
    assert Trainer._numb_steps(fake) == expected
