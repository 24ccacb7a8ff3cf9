"""Memory options of the trainer (deeppot.train.memory): the same numbers as without them, less kept for backward."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from dist_helpers import run_options, tiny_ddp_input

from deeppot.config.input import normalize_input
from deeppot.config.schema import ConfigError
from deeppot.train.lcurve import read_lcurve
from deeppot.train.trainer import Trainer

CPU = torch.device("cpu")


def _trainer(tmp_path, name: str, steps: int = 3, **memory) -> Trainer:
    config = tiny_ddp_input(steps=steps)
    config["training"].update(memory)
    return Trainer(normalize_input(copy.deepcopy(config)), run_options(tmp_path / name, CPU, progress=False))


def _loss_and_grads(trainer: Trainer) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The loss of the trainer's first batch and its gradient, counting the bytes autograd keeps for backward."""
    batch = trainer.train_data.next()
    params = list(trainer.model.parameters())
    kept = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: kept.append(t.numel() * t.element_size()) or t,
                                                  lambda t: t):
        pred = trainer.model.forward_pairs(batch.pairs, create_graph=True)
        loss, _ = trainer.loss(pred, batch.labels, batch.find, batch.natoms, trainer.lr.value(0))
    trainer.saved_bytes = sum(kept)
    return loss.detach(), [g.detach() for g in torch.autograd.grad(loss, params)]


def _assert_same_loss_and_grads(reference: Trainer, other: Trainer) -> None:
    loss0, grads0 = _loss_and_grads(reference)
    loss1, grads1 = _loss_and_grads(other)
    torch.testing.assert_close(loss1, loss0, rtol=1e-12, atol=0.0)
    for g1, g0 in zip(grads1, grads0, strict=True):
        torch.testing.assert_close(g1, g0, rtol=1e-12, atol=1e-14)


def _assert_same_lcurve(tmp_path, a: str, b: str) -> None:
    want, got = (read_lcurve(tmp_path / name / "lcurve.out") for name in (a, b))
    assert want.keys() == got.keys()
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-10, atol=0.0, err_msg=key)


def test_checkpointing_gives_the_same_gradients_and_keeps_less(tmp_path):
    plain = _trainer(tmp_path, "plain")
    recomputed = _trainer(tmp_path, "ckpt", activation_checkpointing=True)
    _assert_same_loss_and_grads(plain, recomputed)
    assert recomputed.saved_bytes < 0.8 * plain.saved_bytes  # the embedding net's intermediates are not kept


def test_checkpointing_trains_the_same_lcurve(tmp_path):
    _trainer(tmp_path, "plain").run()
    _trainer(tmp_path, "ckpt", activation_checkpointing=True).run()
    _assert_same_lcurve(tmp_path, "plain", "ckpt")


def test_memory_keys_are_left_out_of_out_json_unless_given():
    training = normalize_input(tiny_ddp_input())["training"]
    assert "activation_checkpointing" not in training and "atom_chunk" not in training


def test_checkpointing_with_enable_compile_is_refused():
    config = tiny_ddp_input()
    config["training"].update(activation_checkpointing=True, enable_compile=True)
    with pytest.raises(ConfigError, match=r"training\.activation_checkpointing: not together with enable_compile"):
        normalize_input(config)


def test_checkpointing_refuses_an_explicit_cuda_graph_request(tmp_path):
    config = normalize_input(tiny_ddp_input())
    config["training"]["activation_checkpointing"] = True
    with pytest.raises(ValueError, match="eager training step only"):
        Trainer(config, run_options(tmp_path, CPU, cuda_graph=True))


@pytest.mark.parametrize(("atom_chunk", "checkpointing"), [(64, False), (50, True), (1000, True)])
def test_atom_chunks_give_the_same_gradients(tmp_path, atom_chunk, checkpointing):
    """192 atoms: 3 chunks of 64, 4 chunks of 50 (the last one 42 atoms), and one chunk larger than the frame."""
    plain = _trainer(tmp_path, "plain")
    chunked = _trainer(tmp_path, "chunked", atom_chunk=atom_chunk, activation_checkpointing=checkpointing)
    _assert_same_loss_and_grads(plain, chunked)
    if checkpointing and atom_chunk < 192:  # only each chunk's inputs are kept; its activations are recomputed
        assert chunked.saved_bytes < 0.25 * plain.saved_bytes


def test_atom_chunks_with_checkpointing_train_the_same_lcurve(tmp_path):
    _trainer(tmp_path, "plain").run()
    _trainer(tmp_path, "chunked", atom_chunk=50, activation_checkpointing=True).run()
    _assert_same_lcurve(tmp_path, "plain", "chunked")


def test_atom_chunk_must_be_positive():
    config = tiny_ddp_input()
    config["training"]["atom_chunk"] = 0
    with pytest.raises(ConfigError, match="atom_chunk"):
        normalize_input(config)


def _float32(config: dict) -> dict:
    for part in ("descriptor", "fitting_net"):
        config["model"][part]["precision"] = "float32"
    return config


def _trainer32(tmp_path, name: str, **memory) -> Trainer:
    config = _float32(tiny_ddp_input())
    config["training"].update(memory)
    return Trainer(normalize_input(config), run_options(tmp_path / name, CPU, progress=False))


BF16 = {"output_prec": "float32", "compute_prec": "bfloat16"}


def test_bf16_autocast_changes_the_nets_only_and_stays_close(tmp_path):
    plain, bf16 = _trainer32(tmp_path, "fp32"), _trainer32(tmp_path, "bf16", mixed_precision=BF16)
    loss0, grads0 = _loss_and_grads(plain)
    loss1, grads1 = _loss_and_grads(bf16)  # the same first batch (the same seed)
    assert loss1 != loss0  # the GEMMs did run in bfloat16
    torch.testing.assert_close(loss1, loss0, rtol=0.05, atol=0.0)
    for g0, g1 in zip(grads0, grads1, strict=True):
        assert g1.dtype == torch.float32
        assert torch.nn.functional.cosine_similarity(g0.flatten(), g1.flatten(), dim=0) > 0.99
    pred = bf16.model.forward_pairs(bf16.train_data.next().pairs)
    assert pred["force"].dtype == torch.float64 and pred["energy"].dtype == torch.float64


def test_bf16_with_checkpointing_gives_the_bf16_gradients(tmp_path):
    """The recomputation runs under the same autocast: the same numbers (chunks would change the bfloat16 weight
    gradients' rounding, so they agree only to bfloat16 precision)."""
    bf16 = _trainer32(tmp_path, "bf16", mixed_precision=BF16)
    both = _trainer32(tmp_path, "both", mixed_precision=BF16, activation_checkpointing=True)
    loss0, grads0 = _loss_and_grads(bf16)
    loss1, grads1 = _loss_and_grads(both)
    torch.testing.assert_close(loss1, loss0, rtol=1e-6, atol=0.0)
    for g1, g0 in zip(grads1, grads0, strict=True):
        torch.testing.assert_close(g1, g0, rtol=1e-5, atol=1e-6)


def test_bf16_needs_a_float32_model():
    config = tiny_ddp_input()  # float64
    config["training"]["mixed_precision"] = BF16
    with pytest.raises(ConfigError, match=r"training\.mixed_precision: needs a float32 model"):
        normalize_input(config)
