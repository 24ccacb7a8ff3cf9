"""Compression tests run tiny models on one intra-op thread (the machine's cores are shared)."""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():  # the kernel tests run under Triton's interpreter (set before Triton is imported)
    os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
