"""Run 252: the fitting products as `fitting_gemm._persistent_kernel` (`PERSISTENT`: programs a multiprocessor,
pipelining across a program's tiles) against `_gemm_kernel` (None), in one process on trained models; run 250's
`variant_probe.py` runner, its kernel times for the fitting kernels.

Usage (GPU, repository root): python fit_probe.py water=.mid/water/model.dp ... --natoms 98304 --rounds 2
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
import variant_probe

from deeppot.kernels import fitting_gemm

VARIANTS = {"tiled": None, "w1": {"waves": 1, "flatten": False}, "w1_flat": {"waves": 1, "flatten": True},
            "w2_flat": {"waves": 2, "flatten": True}}


def set_persistent(name):
    fitting_gemm.PERSISTENT = VARIANTS[name]


def kernel_ms(fn, calls=5):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return {e.key[:40]: round(e.device_time_total / calls / 1e3, 4) for e in prof.key_averages()
            if "gemm" in e.key or "persistent" in e.key}


if __name__ == "__main__":
    variant_probe.kernel_ms = kernel_ms
    variant_probe.main(VARIANTS, set_persistent)
