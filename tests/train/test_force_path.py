"""The force path of a training run (deeppot.train.force_path): when torch.compile is used, which embedding goes
with it, and the fall-back when compilation fails. The compiled path's numbers against the uncompiled ones need a
GPU: tests/gpu/test_force_path_gpu.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from helpers import make_model

from deeppot.model import analytic
from deeppot.train import force_path
from deeppot.train.force_path import COMPILE_MIN_STEPS, PathOptions, TrainingError, wants_compile
from deeppot.train.memory import MemoryOptions

sys.path.insert(0, str(Path(__file__).parent))
from test_kernel_choice import small_trainer

CUDA, CPU = torch.device("cuda"), torch.device("cpu")


def request(compile=None, tf32=False, distributed=False) -> PathOptions:
    return PathOptions(fused_kernels=None, compile=compile, tf32=tf32, graphed=True, distributed=distributed)


F64, F32 = torch.float64, torch.float32


@pytest.mark.parametrize(("req", "training", "steps", "device", "memory", "dtype", "expected"), [
    (request(), {}, COMPILE_MIN_STEPS, CUDA, MemoryOptions(), F64, True),           # a long float64 GPU run
    (request(), {}, COMPILE_MIN_STEPS - 1, CUDA, MemoryOptions(), F64, False),      # too short to pay back
    (request(), {}, 10**7, CUDA, MemoryOptions(), F32, False),                      # float32 runs faster uncompiled
    (request(), {}, 10**6, CPU, MemoryOptions(), F64, False),                       # CPU compiles only on request
    (request(distributed=True), {}, 10**6, CUDA, MemoryOptions(), F64, False),
    (request(tf32=True), {}, 10**6, CUDA, MemoryOptions(), F64, True),              # TF32 GEMMs compile too
    (request(), {}, 10**6, CUDA, MemoryOptions(atom_chunk=64), F64, False),
    (request(), {"enable_compile": True}, 10, CPU, MemoryOptions(), F32, True),     # DeePMD-kit's key
    (request(compile=False), {"enable_compile": True}, 10**6, CUDA, MemoryOptions(), F64, False),  # --compile off
    (request(compile=True), {}, 10, CPU, MemoryOptions(), F32, True),
])
def test_when_to_compile(req, training, steps, device, memory, dtype, expected):
    assert wants_compile(req, training, steps, device, memory, dtype) is expected


def test_many_batch_shapes_are_not_compiled_by_default():
    """Each shape compiles its own graphs: past COMPILE_MAX_SHAPES the automatic choice stays uncompiled."""
    many = force_path.COMPILE_MAX_SHAPES + 1
    assert not wants_compile(request(), {}, 10**6, CUDA, MemoryOptions(), F64, shapes=many)
    assert wants_compile(request(compile=True), {}, 10**6, CUDA, MemoryOptions(), F32, shapes=many)


def test_distinct_shapes_counts_atoms_and_frames(tmp_path):
    """6 frames in batches of 4: batches of 4 and of 2 frames, two shapes; the same sampler twice adds none."""
    trainer = small_trainer(tmp_path, batch_size=4)
    assert force_path.distinct_shapes(trainer.train_data, None) == 2
    assert force_path.distinct_shapes(trainer.train_data, trainer.train_data) == 2


def test_compile_with_a_memory_option_is_refused():
    with pytest.raises(TrainingError, match=r"does not combine with training\.activation_checkpointing"):
        wants_compile(request(compile=True), {}, 10, CUDA, MemoryOptions(checkpointing=True), F64)


def test_the_embedding_rule_under_compile():
    assert force_path.one_net_per_slot(make_model(type_one_side=True).descriptor)
    assert not force_path.one_net_per_slot(make_model(type_one_side=False).descriptor)  # two types, four nets


def test_a_failing_compile_falls_back_to_the_uncompiled_path(tmp_path, monkeypatch, caplog):
    trainer = small_trainer(tmp_path, batch_size=2)
    model = trainer.model
    batch = force_path.largest_batch(trainer.train_data)
    reference = force_path.batch_loss(model, trainer.loss, batch, 1e-3, False)[0]

    def broken(*args, **kwargs):
        raise RuntimeError("Compiler: cc is not found\nmore lines")

    monkeypatch.setattr(model, "compile_forces", lambda: setattr(model, "pair_energy_fn", broken))
    monkeypatch.setattr(force_path, "compiled_batch_loss", lambda: broken)
    with caplog.at_level("WARNING"):
        chosen = force_path.choose_force_path(model, trainer.train_data, trainer.loss, request(compile=True), True,
                                              MemoryOptions())
    assert "torch.compile failed (RuntimeError: Compiler: cc is not found)" in caplog.text
    assert chosen is force_path.batch_loss
    assert model.pair_energy_fn is analytic.energy_and_pair_grad and model.embed_fn is analytic.embed_all
    assert torch.equal(chosen(model, trainer.loss, batch, 1e-3, False)[0], reference)


def test_the_compiled_batch_loss_computes_the_same(tmp_path):
    """A real compilation on the CPU (Inductor's C++ back end): the training step's loss and parameter gradients
    and validation's metrics equal the uncompiled ones; a float rate becomes a tensor (no graph per rate)."""
    trainer = small_trainer(tmp_path, batch_size=2)
    model, loss = trainer.model, trainer.loss
    batch = force_path.largest_batch(trainer.train_data)
    params = list(model.parameters())
    plain = force_path.batch_loss(model, loss, batch, 1e-3, True)
    plain_grads = torch.autograd.grad(plain[0], params)
    compiled_fn = force_path.compile_or_fall_back(model, trainer.train_data, loss)
    assert compiled_fn is not force_path.batch_loss
    for lr in (1e-3, 5e-4):
        value, _ = compiled_fn(model, loss, batch, lr, True)
        expected = force_path.batch_loss(model, loss, batch, lr, True)[0]
        torch.testing.assert_close(value, expected, rtol=1e-10, atol=0)
    grads = torch.autograd.grad(compiled_fn(model, loss, batch, 1e-3, True)[0], params)
    for a, b in zip(grads, plain_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-12)
    with torch.no_grad():
        valid = compiled_fn(model, loss, batch, 1e-3, False)[1]
    for key, value in plain[1].items():
        torch.testing.assert_close(valid[key], value, rtol=1e-10, atol=0)


def test_tf32_needs_a_float32_model_on_a_gpu():
    model = make_model(precision="float32")
    with pytest.raises(TrainingError, match="applies to GPU tensor cores"):
        force_path.check_tf32(model, request(tf32=True), CPU)
    with pytest.raises(TrainingError, match="needs a float32 descriptor"):
        force_path.check_tf32(make_model(), request(tf32=True), CUDA)
