"""The timed embedding choice on a GPU: both timings are real, the chosen embedding computes what PyTorch does,
and a trainer with the default (auto) choice trains like one with the PyTorch embedding forced."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest
import torch
from helpers import make_model, pairs_of

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "train"))
from test_trainer import small_system, tiny_input

from deeppot.config.input import normalize_input
from deeppot.model import analytic
from deeppot.train import kernel_choice
from deeppot.train.trainer import RunOptions, Trainer

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.parametrize("graphed", [False, True])
def test_timed_choice_keeps_the_gradients(graphed, caplog):
    model = make_model(resnet_dt=False, neuron=[8, 16, 32]).cuda()
    pairs = pairs_of(model, nframes=2).to("cuda")
    reference = kernel_choice.force_training_pass(model, pairs)()
    with caplog.at_level("INFO"):
        kernel_choice.choose_embedding(model, pairs, tf32=False, graphed=graphed)
    assert "fused Triton kernels" in caplog.text and "PyTorch" in caplog.text and " ms" in caplog.text
    chosen = kernel_choice.force_training_pass(model, pairs)()
    for a, b in zip(chosen, reference, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-11)


def test_time_pass_measures_positive_milliseconds():
    x = torch.randn(256, 256, device="cuda")
    for graphed in (False, True):
        ms = kernel_choice.time_pass(lambda: x @ x, graphed, repeats=3)
        assert 0 < ms < 1e3


def test_auto_trainer_trains_like_a_forced_one(tmp_path, monkeypatch):
    monkeypatch.setenv(kernel_choice.CACHE_ENV, str(tmp_path / "cache"))  # not the user's remembered choices
    config = tiny_input([small_system(tmp_path, "a", nframes=4)], None, steps=4)
    config["model"]["descriptor"].update(neuron=[25, 50, 100], resnet_dt=False)
    runs = {}
    for name, fused in (("auto", None), ("plain", False)):
        options = RunOptions(workdir=tmp_path / name, device=torch.device("cuda"), progress=False, fused_kernels=fused)
        runs[name] = Trainer(normalize_input(copy.deepcopy(config)), options)
    assert runs["plain"].model.embed_fn is analytic.embed_all
    for step in range(4):
        m_auto, m_plain = runs["auto"].step(step), runs["plain"].step(step)
        for key in m_plain:
            torch.testing.assert_close(m_auto[key], m_plain[key], rtol=1e-9, atol=0)
