"""Run 230: the way back of a call's outputs and the compare of kept types on the GPU machine's host (issue 9):
a copy from the GPU into pageable memory (`.cpu()`) against one into pinned memory and a copy out of it (PyTorch's
clone or NumPy's copy), and torch.equal against np.array_equal. Median us of 200 repeats each.
Usage: python out_probe.py"""
import time

import numpy as np
import torch


def us(fn, n=200):
    fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return np.median(times) * 1e6


def through_pinned(values, pinned, copy):
    pinned.copy_(values, non_blocking=True)
    torch.cuda.current_stream().synchronize()
    return copy(pinned)


def probe(natoms):
    values = torch.rand(3 * natoms + 11, dtype=torch.float64, device="cuda")
    pinned = torch.empty(values.shape, dtype=values.dtype, pin_memory=True)
    types = torch.from_numpy(np.random.default_rng(1).integers(0, 2, (1, natoms)))
    kept = types.clone()
    rows = {
        "D2H pageable .cpu().numpy()": lambda: values.cpu().numpy(),
        "D2H pinned + clone": lambda: through_pinned(values, pinned, lambda p: p.clone().numpy()),
        "D2H pinned + numpy copy": lambda: through_pinned(values, pinned, lambda p: p.numpy().copy()),
        "torch.equal types": lambda: torch.equal(types, kept),
        "np.array_equal types": lambda: np.array_equal(types.numpy(), kept.numpy()),
    }
    print(natoms, "atoms: " + "; ".join(f"{k} {us(f):.1f}" for k, f in rows.items()), flush=True)


for natoms in (192, 12288, 98304):
    probe(natoms)
