"""training.grad_accum_steps: one optimizer step from the mean gradient of several batches."""

from __future__ import annotations

import copy

import pytest
import torch
from dist_helpers import run_options, tiny_ddp_input

from deeppot.config.input import normalize_input
from deeppot.config.schema import ConfigError
from deeppot.train.trainer import Trainer

CPU = torch.device("cpu")


def test_two_accumulated_batches_equal_their_mean_gradient(tmp_path):
    config = tiny_ddp_input(steps=2)
    config["training"]["grad_accum_steps"] = 2
    accumulated = Trainer(normalize_input(copy.deepcopy(config)), run_options(tmp_path / "a", CPU))
    accumulated.run()
    del config["training"]["grad_accum_steps"]
    manual = Trainer(normalize_input(copy.deepcopy(config)), run_options(tmp_path / "m", CPU))
    params = list(manual.model.parameters())
    for step in range(2):
        lr = manual.lr.value(step)
        grads = []
        for _ in range(2):  # the same sampler draws both batches
            batch = manual.train_data.next()
            pred = manual.model.forward_pairs(batch.pairs, create_graph=True)
            grads.append(torch.autograd.grad(manual.loss(pred, batch.labels, batch.find, batch.natoms, lr)[0],
                                             params, allow_unused=True))
        for p, g0, g1 in zip(params, *grads, strict=True):
            p.grad = None if g0 is None else g0 / 2 + g1 / 2
        for group in manual.optimizer.param_groups:
            group["lr"] = lr
        manual.optimizer.step()
    for got, want in zip(accumulated.model.parameters(), params, strict=True):
        torch.testing.assert_close(got.detach(), want.detach(), rtol=1e-12, atol=1e-14)


def test_grad_accum_steps_must_be_positive():
    config = tiny_ddp_input()
    config["training"]["grad_accum_steps"] = 0
    with pytest.raises(ConfigError, match="grad_accum_steps"):
        normalize_input(config)
