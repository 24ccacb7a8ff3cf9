"""Run 249: the copy of `DeepPot.eval`'s outputs back to the host, in context (after the GPU's wait), by variant.

Each variant replaces `host_copy` (in `deeppot.infer.deep_pot` and `deeppot.infer.graph`) for a block of calls;
blocks alternate over rounds; median ms a whole eval call. Usage (GPU): python copy_out_probe.py water=PATH ...
"""
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, replicas_for, replicate

import deeppot.infer.deep_pot as deep_pot
import deeppot.infer.graph as graph
from deeppot.infer import DeepPot

KEPT = deep_pot.host_copy
DEVICE, NATOMS = os.environ.get("PROBE_DEVICE", "cuda"), int(os.environ.get("PROBE_NATOMS", "98304"))
CALLS = int(os.environ.get("PROBE_CALLS", "40"))


def pinned(values):
    buf = torch.empty(values.shape, dtype=values.dtype, pin_memory=True)
    buf.copy_(values, non_blocking=True)
    torch.cuda.current_stream(values.device).synchronize()
    return buf


def numpy_copy(values):
    """pinned, then NumPy's one-thread copy into memory of its own"""
    if values.numel() < deep_pot.PINNED_MIN:
        return KEPT(values)
    buf = pinned(values).numpy()
    out = np.empty_like(buf)
    np.copyto(out, buf)
    return out


def pageable(values):
    """PyTorch's copy straight into pageable memory"""
    return values.cpu().numpy()


def no_copy(values):
    """the pinned buffer itself (a lower bound: its memory stays pinned while the arrays live)"""
    if values.numel() < deep_pot.PINNED_MIN:
        return KEPT(values)
    return pinned(values).numpy()


VARIANTS = {"kept": KEPT, "numpy_copy": numpy_copy, "pageable": pageable, "no_copy": no_copy}


def block(dp, args, calls=CALLS):
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        dp.eval(*args)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main():
    for spec in sys.argv[1:]:
        system, path = spec.split("=")
        coord, box, atype = load_frame(Path(".peer/data"), system)
        c, b, t = replicate(coord, box, atype, replicas_for(NATOMS, len(atype)))
        dp = DeepPot(path, device=DEVICE)
        args = (c[None], b.reshape(1, 9), t)
        ref = dp.eval(*args)
        for name, fn in VARIANTS.items():
            deep_pot.host_copy = graph.host_copy = fn
            out = dp.eval(*args)
            assert all(np.allclose(x, y, rtol=1e-12, atol=1e-12) for x, y in zip(out, ref, strict=True)), name
        block(dp, args, 10)
        for rnd in range(3):
            row = {}
            for name, fn in VARIANTS.items():
                deep_pot.host_copy = graph.host_copy = fn
                row[name] = round(block(dp, args), 3)
            print(system, len(t), "round", rnd, row, flush=True)
        deep_pot.host_copy = graph.host_copy = KEPT


if __name__ == "__main__":
    main()
