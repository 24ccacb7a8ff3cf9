"""Kernel tests run compiled on a GPU, or under Triton's interpreter on the CPU (set before Triton is imported)."""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
