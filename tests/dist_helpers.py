"""Helpers for the data-parallel tests: a tiny input, and rank workers that `torch.multiprocessing.spawn` can import
(test modules are imported with --import-mode=importlib, so spawned children cannot import them by name)."""

from __future__ import annotations

import copy
import os
import socket
import sys
from pathlib import Path

import torch
import torch.multiprocessing as mp
from helpers import EXAMPLE_DATA

from deeppot.config.input import normalize_input
from deeppot.train import distributed
from deeppot.train.trainer import RunOptions, Trainer


def tiny_ddp_input(steps: int = 3, scale_by_worker: str | None = None) -> dict:
    """Water with a 2-frame-store-sized model: float64 so weight comparisons can be tight."""
    config = {
        "model": {
            "type_map": ["O", "H"],
            "descriptor": {"type": "se_e2_a", "sel": [16, 32], "rcut": 4.0, "rcut_smth": 0.5, "neuron": [4, 8],
                           "axis_neuron": 4, "precision": "float64", "seed": 1},
            "fitting_net": {"neuron": [16, 16], "precision": "float64", "seed": 1},
            "data_stat_nbatch": 2,
        },
        "learning_rate": {"start_lr": 1e-3, "stop_lr": 1e-4, "decay_steps": 2},
        "loss": {"start_pref_e": 0.02, "limit_pref_e": 1, "start_pref_f": 1000, "limit_pref_f": 1},
        "training": {"training_data": {"systems": [str(EXAMPLE_DATA / "data_0")], "batch_size": 1},
                     "validation_data": {"systems": [str(EXAMPLE_DATA / "data_3")], "batch_size": 1,
                                         "numb_btch": 1},
                     "numb_steps": steps, "seed": 7, "disp_freq": 1, "save_freq": steps},
    }
    if scale_by_worker is not None:
        config["learning_rate"]["scale_by_worker"] = scale_by_worker
    return config


def run_options(workdir, device: torch.device, **options) -> RunOptions:
    """The given sel is used as is (no neighbour statistics over the data): quicker start-up."""
    return RunOptions(workdir=workdir, device=device, skip_neighbor_stat=True, **options)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(fn, nprocs: int, *args) -> None:
    """Run fn(rank, world_size, port, *args) on `nprocs` gloo ranks (CPU)."""
    mp.spawn(_join_then_run, args=(fn, nprocs, free_port(), *args), nprocs=nprocs, join=True)


def _join_then_run(rank: int, fn, world_size: int, port: int, *args) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank),
                      WORLD_SIZE=str(world_size))
    torch.set_num_threads(1)
    info, device = distributed.from_env("cpu")
    try:
        fn(info, device, *args)
        distributed.barrier(info)  # as the CLI: no rank destroys the group while another still talks to it
    finally:
        distributed.shutdown(info)
    # A rank that returns normally leaves without the interpreter's teardown: once in a few hundred runs a gloo
    # rank aborted there ("terminate called without an active exception", SIGABRT, CI of stop 21) after its work
    # was done and checked. A rank that raised still goes through mp.spawn's error report above.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def train_and_dump(info, device, config: dict, root: str, restart: str | None = None) -> None:
    """Train in root/rank<r> (rank 1's folder must stay empty), then dump this rank's final weights and lr, and how
    many parameters have optimizer state on this rank (all of them unless the state is sharded)."""
    workdir = Path(root, f"rank{info.rank}")
    workdir.mkdir(parents=True, exist_ok=True)
    trainer = Trainer(normalize_input(copy.deepcopy(config)),
                      run_options(workdir, device, dist=info, restart=None if restart is None else Path(restart)))
    trainer.run()
    local = getattr(trainer.optimizer, "optim", trainer.optimizer)  # ZeroRedundancyOptimizer: this rank's share
    dump = {"params": [p.detach().clone() for p in trainer.model.parameters()],
            "optimizer_lr": trainer.optimizer.param_groups[0]["lr"], "lr_scale": trainer.lr_scale,
            "local_states": len(local.state)}
    torch.save(dump, Path(root, f"weights{info.rank}.pt"))


def lr_scales(info, device, root: str) -> None:
    """The optimizer's rate after one step for each scale_by_worker value (rank 0 records them)."""
    found = {}
    for mode in ("linear", "sqrt", "none"):
        workdir = Path(root, mode, f"rank{info.rank}")
        workdir.mkdir(parents=True, exist_ok=True)
        config = normalize_input(tiny_ddp_input(steps=1, scale_by_worker=mode))
        trainer = Trainer(config, run_options(workdir, device, dist=info))
        trainer.run()
        found[mode] = (trainer.optimizer.param_groups[0]["lr"], trainer.lr.value(0))
    if info.is_main:
        torch.save(found, Path(root, "lr_scales.pt"))
