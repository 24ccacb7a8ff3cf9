"""`deeppot train --profile`: a PyTorch profiler trace of a few steps and a hotspot summary.

The summary answers where a step's time goes: device kernels (top ones by time), and on the host the share spent
launching work, copying memory and waiting for the device (synchronisation).
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

HOST_CATEGORIES = {
    "launch": ("cudaLaunchKernel", "cudaGraphLaunch", "cuLaunchKernel", "cudaLaunchKernelExC"),
    "copy": ("cudaMemcpy", "cudaMemcpyAsync", "cudaMemsetAsync", "aten::copy_", "aten::to"),
    "sync": ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "aten::item",
             "aten::_local_scalar_dense"),
}


def profile_training(trainer, warmup: int = 10, active: int = 5, trace: str | Path = "timeline.json",
                     top: int = 15) -> str:
    """Run warmup + active training steps (the active ones profiled); write a Chrome trace; return the summary."""
    cuda = trainer.opt.device.type == "cuda"
    for step in range(warmup):
        trainer.step(step)
    _sync(cuda)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    t0 = time.perf_counter()
    with profile(activities=activities) as prof:
        for step in range(warmup, warmup + active):
            trainer.step(step)
        _sync(cuda)
    wall = (time.perf_counter() - t0) / active
    prof.export_chrome_trace(str(trace))
    return summarize(prof, wall, active, cuda, str(trace), top)


def _sync(cuda: bool) -> None:
    if cuda:
        torch.cuda.synchronize()


def summarize(prof, wall_per_step: float, steps: int, cuda: bool, trace: str, top: int = 15) -> str:
    events = prof.key_averages()
    lines = [f"profile of {steps} steps: {wall_per_step * 1e3:.3f} ms/step wall; trace written to {trace}"]
    if cuda:
        kernels = sorted((e for e in events if e.device_time_total > 0 and e.device_type.name == "CUDA"),
                         key=lambda e: e.device_time_total, reverse=True)
        busy = sum(e.device_time_total for e in kernels) / steps / 1e3
        launched = sum(e.count for e in kernels) / steps
        lines.append(f"device busy {busy:.3f} ms/step ({100 * busy / (wall_per_step * 1e3):.0f}% of the wall time) "
                     f"in {launched:.0f} kernels a step")
        lines.append(f"{'kernel':<70} {'ms/step':>8} {'calls/step':>10}")
        for e in kernels[:top]:
            lines.append(f"{e.key[:70]:<70} {e.device_time_total / steps / 1e3:8.3f} {e.count / steps:10.1f}")
    host = {name: sum(e.cpu_time_total for e in events if e.key in keys) / steps / 1e3
            for name, keys in HOST_CATEGORIES.items()}
    total = wall_per_step * 1e3
    lines.append("host time per step: " + ", ".join(f"{k} {v:.3f} ms ({100 * v / total:.0f}%)"
                                                      for k, v in host.items()))
    return "\n".join(lines)
