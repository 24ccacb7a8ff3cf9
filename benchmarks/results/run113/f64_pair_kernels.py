"""train_bench.py's child process (one case, `--case NAME ...`) with the pair-gradient kernels allowed for float64
descriptors too (run 113's question: do the spill-free tiles make them faster than the reference there?)."""

import os
import sys
import time

import torch

from deeppot.kernels import pair_grad
from deeppot.model.energy_model import EnergyModel


def use_pair_grad_kernel(self, device: torch.device) -> bool:
    self.pair_grad_fn = pair_grad.pair_grad
    return True


EnergyModel.use_pair_grad_kernel = use_pair_grad_kernel
os.environ.setdefault("DEEPPOT_BENCH_T_LAUNCH", repr(time.time()))
sys.argv[0] = "train_bench.py"
import train_bench  # noqa: E402

train_bench.main()
