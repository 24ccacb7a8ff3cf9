"""The timed choice between the fused and the PyTorch embedding (deeppot.train.kernel_choice), on the CPU:
the decision with stand-in timings, the timed pass leaving the weights and .grad alone. The timing itself needs
CUDA: tests/gpu/test_kernel_choice_gpu.py."""

from __future__ import annotations

import functools

import pytest
import torch
from helpers import make_model, pairs_of

from deeppot.cli.main import _fused_choice, build_parser
from deeppot.model import analytic
from deeppot.train import kernel_choice


def test_compare_alternates_and_keeps_each_best():
    calls, values = [], {"a": iter([3.0, 1.0, 2.0]), "b": iter([5.0, 4.0, 6.0])}
    timers = {name: (lambda n=name: calls.append(n) or next(values[n])) for name in values}
    best = kernel_choice.compare(timers, rounds=3)
    assert calls == ["a", "b"] * 3
    assert best == {"a": 1.0, "b": 4.0}


@pytest.fixture
def model_with_stand_in_kernels(monkeypatch):
    """A tiny model whose 'fused kernels' are a distinct callable computing what PyTorch computes."""
    model = make_model(resnet_dt=False)
    stand_in = functools.partial(analytic.embed_all)

    def use_fused_kernels(device, tf32=False):
        model.embed_fn = stand_in
        return True

    monkeypatch.setattr(model, "use_fused_kernels", use_fused_kernels)
    return model, stand_in


@pytest.mark.parametrize(("fused_ms", "torch_ms", "keeps_fused"), [(1.0, 2.0, True), (2.0, 1.0, False),
                                                                   (1.0, 1.0, True)])
def test_the_faster_embedding_is_kept(monkeypatch, model_with_stand_in_kernels, fused_ms, torch_ms, keeps_fused):
    model, stand_in = model_with_stand_in_kernels
    modes = []

    def fake_time(run, graphed, repeats=kernel_choice.REPEATS):
        modes.append(graphed)
        return fused_ms if model.embed_fn is stand_in else torch_ms

    monkeypatch.setattr(kernel_choice, "time_pass", fake_time)
    kept = kernel_choice.choose_embedding(model, pairs_of(model), tf32=False, graphed=True)
    assert kept is keeps_fused
    assert model.embed_fn is (stand_in if keeps_fused else analytic.embed_all)
    assert modes == [True] * 2 * kernel_choice.ROUNDS


def test_ranks_decide_on_combined_timings(monkeypatch, model_with_stand_in_kernels):
    """This rank finds the fused kernels faster; the sum over ranks says otherwise, and the sum decides."""
    model, stand_in = model_with_stand_in_kernels
    monkeypatch.setattr(kernel_choice, "time_pass",
                        lambda run, graphed, repeats=0: 1.0 if model.embed_fn is stand_in else 2.0)
    other_rank = torch.tensor([5.0, 1.0])
    kept = kernel_choice.choose_embedding(model, pairs_of(model), tf32=False, graphed=False,
                                          agree=lambda t: t + other_rank)
    assert not kept and model.embed_fn is analytic.embed_all


def test_no_fused_kernels_on_the_cpu(tmp_path, monkeypatch):
    """Not even when the Triton interpreter could run them (TRITON_INTERPRET=1, as the kernel tests set it)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    trainer = small_trainer(tmp_path, batch_size=1)
    assert not kernel_choice.choose_for_sampler(trainer.model, trainer.train_data, graphed=False)
    assert trainer.model.embed_fn is analytic.embed_all


def test_the_timed_pass_leaves_weights_and_grads_alone():
    model = make_model(resnet_dt=False)
    before = [p.detach().clone() for p in model.parameters()]
    grads = kernel_choice.force_training_pass(model, pairs_of(model))()
    assert len(grads) == len(before) and any(g.abs().max() > 0 for g in grads)
    for p, b in zip(model.parameters(), before, strict=True):
        assert p.grad is None
        assert torch.equal(p.detach(), b)


@pytest.mark.parametrize(("argv", "expected"), [([], None), (["--fused-kernels", "on"], True),
                                                (["--fused-kernels", "off"], False), (["--no-fused-kernels"], False)])
def test_cli_fused_kernel_choice(argv, expected):
    args = build_parser().parse_args(["train", "input.json", *argv])
    assert _fused_choice(args) is expected


def small_trainer(tmp_path, batch_size: int):
    """A CPU trainer on 6 frames of the water example (tests/train/test_trainer.py's tiny input)."""
    import copy
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_trainer import small_system, tiny_input

    from deeppot.config.input import normalize_input
    from deeppot.train.trainer import RunOptions, Trainer

    config = tiny_input([small_system(tmp_path, "a", nframes=6)], None)
    config["training"]["training_data"]["batch_size"] = batch_size
    return Trainer(normalize_input(copy.deepcopy(config)), RunOptions(workdir=tmp_path, device=torch.device("cpu"),
                                                                     progress=False))


def test_the_largest_batch_is_timed(tmp_path, monkeypatch):
    """6 frames in batches of 4 give batches of 4 and of 2 frames: the choice is timed on a batch of 4 (the
    CPU device check stood in for, since the timing itself needs CUDA)."""
    trainer = small_trainer(tmp_path, batch_size=4)
    seen = []
    monkeypatch.setattr(kernel_choice, "choose_embedding",
                        lambda model, pairs, tf32, graphed, agree, cache: seen.append((pairs.rij.shape[0], graphed))
                        or False)
    monkeypatch.setattr(kernel_choice, "on_cuda", lambda sampler: True)
    assert kernel_choice.choose_for_sampler(trainer.model, trainer.train_data, graphed=True) is False
    assert seen == [(4, True)]


def test_a_remembered_choice_skips_the_timing(tmp_path, monkeypatch, model_with_stand_in_kernels, caplog):
    """The first run times and writes the file; a second run of the same shapes reads it and times nothing;
    another batch shape is timed afresh."""
    model, stand_in = model_with_stand_in_kernels
    cache = tmp_path / "cache" / "embedding_choice.json"
    timed = []

    def fake_time(run, graphed, repeats=0):
        timed.append(graphed)
        return 2.0 if model.embed_fn is stand_in else 1.0  # PyTorch faster

    monkeypatch.setattr(kernel_choice, "time_pass", fake_time)
    pairs = pairs_of(model)
    assert not kernel_choice.choose_embedding(model, pairs, tf32=False, graphed=True, cache=cache)
    first = len(timed)
    assert first == 2 * kernel_choice.ROUNDS and cache.exists()
    with caplog.at_level("INFO"):
        assert not kernel_choice.choose_embedding(model, pairs, tf32=False, graphed=True, cache=cache)
    assert len(timed) == first and model.embed_fn is analytic.embed_all
    assert "remembered in" in caplog.text
    kernel_choice.choose_embedding(model, pairs, tf32=False, graphed=False, cache=cache)
    assert len(timed) == 2 * first
    assert len(kernel_choice.read_choices(cache)) == 2


def test_an_unwritable_cache_only_costs_the_timing(tmp_path, monkeypatch, model_with_stand_in_kernels):
    model, stand_in = model_with_stand_in_kernels
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setattr(kernel_choice, "time_pass",
                        lambda run, graphed, repeats=0: 1.0 if model.embed_fn is stand_in else 2.0)
    assert kernel_choice.choose_embedding(model, pairs_of(model), tf32=False, graphed=True,
                                          cache=blocker / "embedding_choice.json")
    assert model.embed_fn is stand_in


def test_cache_file_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(kernel_choice.CACHE_ENV, str(tmp_path))
    assert kernel_choice.cache_file() == tmp_path / "embedding_choice.json"
    monkeypatch.delenv(kernel_choice.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert kernel_choice.cache_file() == tmp_path / "xdg" / "deeppot" / "embedding_choice.json"
