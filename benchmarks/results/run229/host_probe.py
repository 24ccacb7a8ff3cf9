"""Run 229: what the host's steps of a `DeepPot.eval` call cost on the GPU machine's CPU (issue 9): copies into
pinned memory (PyTorch's copy_ against NumPy's copyto), the input checks' passes, and the copy to the GPU's launch.
Median us of 200 repeats each. Usage: python host_probe.py"""
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


def probe(natoms):
    coord = np.random.default_rng(0).random((1, natoms, 3)) * 50
    atype = np.random.default_rng(1).integers(0, 2, natoms)
    src = torch.from_numpy(coord)
    pinned = torch.empty(src.shape, dtype=src.dtype, pin_memory=True)
    view = pinned.numpy()
    static = torch.empty(src.shape, dtype=src.dtype, device="cuda")
    rows = {
        "torch copy_ to pinned": lambda: pinned.copy_(src),
        "np.copyto to pinned": lambda: np.copyto(view, coord),
        "H2D launch from pinned": lambda: static.copy_(pinned, non_blocking=True),
        "H2D from pageable (sync)": lambda: static.copy_(src),
        "isfinite(coord).all()": lambda: np.isfinite(coord).all(),
        "finite min and max": lambda: np.isfinite(coord.min()) and np.isfinite(coord.max()),
        "types min and max": lambda: (atype.min(), atype.max()),
        "np.tile types": lambda: np.tile(atype.reshape(1, natoms), (1, 1)),
        "np.array_equal types": lambda: np.array_equal(atype, atype.copy()),
    }
    print(natoms, "atoms: " + "; ".join(f"{k} {us(f):.1f}" for k, f in rows.items()), flush=True)
    torch.cuda.synchronize()


print("torch threads", torch.get_num_threads())
for natoms in (192, 12288, 98304):
    probe(natoms)
