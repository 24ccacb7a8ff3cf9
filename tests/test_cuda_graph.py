"""`deeppot.cuda_graph.capture`: the garbage collector is off for exactly the capture (CPU: torch.cuda.graph faked;
the captures themselves are in the GPU tests)."""

from __future__ import annotations

import contextlib
import gc

import pytest
import torch

from deeppot.cuda_graph import capture


@pytest.fixture
def fake_graph(monkeypatch):
    seen = []

    @contextlib.contextmanager
    def graph(cuda_graph, **kwargs):
        seen.append((cuda_graph, kwargs, gc.isenabled()))
        yield

    monkeypatch.setattr(torch.cuda, "graph", graph)
    return seen


def test_the_collector_is_off_during_the_capture_and_back_after(fake_graph):
    assert gc.isenabled()
    with capture("g", pool="p"):
        assert not gc.isenabled()
    assert gc.isenabled() and fake_graph == [("g", {"pool": "p"}, False)]
    with pytest.raises(RuntimeError), capture("g"):  # a failed capture gives the collector back too
        raise RuntimeError("capture failed")
    assert gc.isenabled()


def test_a_collector_already_off_stays_off(fake_graph):
    gc.disable()
    try:
        with capture("g"):
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
