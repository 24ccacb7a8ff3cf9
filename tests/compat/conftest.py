"""Compat tests run tiny models: one intra-op thread is as fast, and it avoids OpenMP spin-waiting when other
processes share the cores (2 threads were 20x slower than 1 on a loaded 2-core machine)."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
