"""Compression tests run tiny models on one intra-op thread (`helpers.one_thread`); without a GPU the kernel tests
run under Triton's interpreter (set before Triton is imported)."""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from helpers import one_thread  # noqa: F401  (autouse: applies to this folder)
