"""training.zero_stage 1 on 2 CPU ranks (gloo): sharded Adam states, the weights of plain Adam, checkpoints."""

from __future__ import annotations

import copy

import torch
from dist_helpers import run_options, spawn, tiny_ddp_input, train_and_dump

from deeppot.config.input import normalize_input
from deeppot.io.model_file import read_checkpoint
from deeppot.train.trainer import Trainer

CPU = torch.device("cpu")
STEPS = 3


def _config(zero_stage: int, steps: int = STEPS) -> dict:
    config = tiny_ddp_input(steps=steps)
    config["training"]["zero_stage"] = zero_stage
    return config


def _assert_same_weights(got: list[torch.Tensor], want: list[torch.Tensor]) -> None:
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)


def test_zero1_equals_plain_adam_and_its_checkpoint_restarts(tmp_path):
    for stage in (0, 1):
        spawn(train_and_dump, 2, _config(stage), str(tmp_path / f"zero{stage}"))
    plain, zero = ({r: torch.load(tmp_path / f"zero{s}" / f"weights{r}.pt") for r in (0, 1)} for s in (0, 1))
    nparams = len(plain[0]["params"])
    assert plain[0]["local_states"] == plain[1]["local_states"] == nparams
    assert zero[0]["local_states"] + zero[1]["local_states"] == nparams  # each rank keeps its share only
    assert 0 < zero[0]["local_states"] < nparams
    for rank in (0, 1):
        _assert_same_weights(zero[rank]["params"], plain[0]["params"])
    # rank 0's checkpoint holds the whole (gathered) Adam state, equal to plain Adam's
    ckpt = {s: read_checkpoint(tmp_path / f"zero{s}" / "rank0" / f"model.ckpt-{STEPS}.pt") for s in (0, 1)}
    states = [ckpt[s]["optimizer"]["state"] for s in (0, 1)]
    assert sorted(states[1]) == list(range(nparams))
    for index in range(nparams):
        for key in ("exp_avg", "exp_avg_sq"):
            torch.testing.assert_close(states[1][index][key], states[0][index][key], rtol=1e-12, atol=1e-14)
    # restarting each run for one more step (sharded and plain) gives the same weights again
    for stage in (0, 1):
        restart = str(tmp_path / f"zero{stage}" / "rank0" / f"model.ckpt-{STEPS}.pt")
        spawn(train_and_dump, 2, _config(stage, STEPS + 1), str(tmp_path / f"again{stage}"), restart)
    again = [torch.load(tmp_path / f"again{s}" / "weights0.pt")["params"] for s in (0, 1)]
    _assert_same_weights(again[1], again[0])
    # the gathered checkpoint is an ordinary Adam state: one process without ZeRO restarts from it
    single = Trainer(normalize_input(_config(0, STEPS + 1)), run_options(
        tmp_path / "single", CPU, restart=tmp_path / "zero1" / "rank0" / f"model.ckpt-{STEPS}.pt"))
    for index, p in enumerate(single.model.parameters()):
        torch.testing.assert_close(single.optimizer.state[p]["exp_avg_sq"], states[0][index]["exp_avg_sq"],
                                   rtol=1e-12, atol=1e-14)


def test_zero1_in_one_process_is_plain_adam(tmp_path):
    trainer = Trainer(normalize_input(_config(1)), run_options(tmp_path, CPU))
    assert type(trainer.optimizer) is torch.optim.Adam
    plain = Trainer(normalize_input(copy.deepcopy(_config(0))), run_options(tmp_path / "plain", CPU))
    trainer.run()
    plain.run()
    _assert_same_weights([p.detach() for p in trainer.model.parameters()],
                         [p.detach() for p in plain.model.parameters()])
