"""The force path of a training run (deeppot.train.force_path): when torch.compile is used, which embedding goes
with it, and the fall-back when compilation fails. The compiled path's numbers against the uncompiled ones need a
GPU: tests/gpu/test_force_path_gpu.py."""

from __future__ import annotations

import pytest
import torch
from helpers import make_model, pairs_of

from deeppot.model import analytic
from deeppot.train import force_path
from deeppot.train.force_path import COMPILE_MIN_STEPS, PathOptions, TrainingError, wants_compile
from deeppot.train.memory import MemoryOptions

CUDA, CPU = torch.device("cuda"), torch.device("cpu")


def request(compile=None, tf32=False, distributed=False) -> PathOptions:
    return PathOptions(fused_kernels=None, compile=compile, tf32=tf32, graphed=True, distributed=distributed)


@pytest.mark.parametrize(("req", "training", "steps", "device", "memory", "expected"), [
    (request(), {}, COMPILE_MIN_STEPS, CUDA, MemoryOptions(), True),           # a long GPU run
    (request(), {}, COMPILE_MIN_STEPS - 1, CUDA, MemoryOptions(), False),      # too short to pay back
    (request(), {}, 10**6, CPU, MemoryOptions(), False),                       # CPU runs compile only on request
    (request(distributed=True), {}, 10**6, CUDA, MemoryOptions(), False),
    (request(tf32=True), {}, 10**6, CUDA, MemoryOptions(), False),
    (request(), {}, 10**6, CUDA, MemoryOptions(atom_chunk=64), False),
    (request(), {"enable_compile": True}, 10, CPU, MemoryOptions(), True),     # DeePMD-kit's key
    (request(compile=False), {"enable_compile": True}, 10**6, CUDA, MemoryOptions(), False),  # --compile off
    (request(compile=True), {}, 10, CPU, MemoryOptions(), True),
])
def test_when_to_compile(req, training, steps, device, memory, expected):
    assert wants_compile(req, training, steps, device, memory) is expected


def test_compile_with_a_memory_option_is_refused():
    with pytest.raises(TrainingError, match=r"does not combine with training\.activation_checkpointing"):
        wants_compile(request(compile=True), {}, 10, CUDA, MemoryOptions(checkpointing=True))


def test_the_embedding_rule_under_compile():
    assert force_path.one_net_per_slot(make_model(type_one_side=True).descriptor)
    assert not force_path.one_net_per_slot(make_model(type_one_side=False).descriptor)  # two types, four nets


class _Sampler:
    """The part of a DataSampler that the fall-back reads: its stores' device and a batch."""

    def __init__(self, model):
        self.stores = [type("Store", (), {"device": CPU})()]
        self.pairs = pairs_of(model)


def test_a_failing_compile_falls_back_to_the_uncompiled_path(monkeypatch, caplog):
    model = make_model()
    sampler = _Sampler(model)
    monkeypatch.setattr(force_path, "largest_batch", lambda s: s.pairs)
    reference = model.forward_pairs(sampler.pairs)["force"]

    def broken(*args, **kwargs):
        raise RuntimeError("Compiler: cc is not found\nmore lines")

    monkeypatch.setattr(model, "compile_forces", lambda: setattr(model, "pair_energy_fn", broken))
    with caplog.at_level("WARNING"):
        force_path.choose_force_path(model, sampler, request(compile=True), True, MemoryOptions())
    assert "torch.compile failed (RuntimeError: Compiler: cc is not found)" in caplog.text
    assert model.pair_energy_fn is analytic.energy_and_pair_grad and model.embed_fn is analytic.embed_all
    torch.testing.assert_close(model.forward_pairs(sampler.pairs)["force"], reference, rtol=0, atol=0)


def test_tf32_needs_the_fused_gpu_kernels():
    model = make_model(precision="float32")
    with pytest.raises(TrainingError, match="applies to the fused GPU kernels"):
        force_path.check_tf32(model, request(tf32=True), CPU)
    with pytest.raises(TrainingError, match="needs a float32 descriptor"):
        force_path.check_tf32(make_model(), request(tf32=True), CUDA)
