"""Run 86 probe: the fitting net's float32 GEMMs as three one-pass TF32 cuBLAS GEMMs on split operands.

a = a_hi + a_lo with a_hi rounded to TF32 (10 mantissa bits), a_lo = a - a_hi (exact); then
a @ w ~ a_hi @ w_hi + a_lo @ w_hi + a_hi @ w_lo, each product exact in TF32 up to the lo parts' own rounding
(2^-22 of a): float32-level accuracy from tensor cores. Times each GEMM shape of the water fitting net (forward and
the input gradient's transposed products) against float32 cuBLAS, single TF32, and the whole fit_with_input_grad.

    python split_tf32.py OUT.jsonl
"""
import functools
import json
import sys
from itertools import pairwise

import torch


def split(a):
    hi = ((a.view(torch.int32) + 0x1000) & -0x2000).view(torch.float32)
    return hi, a - hi


def tf32(flag):
    torch.backends.cuda.matmul.allow_tf32 = flag


def mm3_presplit(a_hi, a_lo, w_hi, w_lo):
    tf32(True)
    out = torch.mm(a_hi, w_hi)
    out.addmm_(a_lo, w_hi)
    out.addmm_(a_hi, w_lo)
    tf32(False)
    return out


def mm3(a, w_hi, w_lo):
    return mm3_presplit(*split(a), w_hi, w_lo)


def mm_tf32(a, w):
    tf32(True)
    out = a @ w
    tf32(False)
    return out


def timed(fn, reps=40):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / reps


def rel_err(x, ref):
    return float((x.double() - ref).abs().max() / ref.abs().max())


def gemm_variants(a, w):
    w_hi, w_lo = split(w)
    a_hi, a_lo = split(a)
    return {"fp32": functools.partial(torch.mm, a, w), "tf32": functools.partial(mm_tf32, a, w),
            "split3": functools.partial(mm3, a, w_hi, w_lo),
            "split3_presplit": functools.partial(mm3_presplit, a_hi, a_lo, w_hi, w_lo),
            "split_only": functools.partial(split, a)}


def gemm_rows(out):
    torch.manual_seed(0)
    for m, k, n in [(65536, 1600, 240), (65536, 240, 240), (65536, 240, 1600), (98304, 1600, 240)]:
        a = torch.randn(m, k, device="cuda") * 0.3
        w = torch.randn(k, n, device="cuda") / k ** 0.5
        ref = a.double() @ w.double()
        for name, fn in gemm_variants(a, w).items():
            ms = timed(fn)
            err = rel_err(fn(), ref) if name != "split_only" else None
            row = dict(case=f"gemm:{m}x{k}x{n}", variant=name, ms=round(ms, 4), rel_err=err,
                       tflops=round(2 * m * k * n / ms / 1e9, 1))
            print(json.dumps(row))
            out.write(json.dumps(row) + "\n")


def fit(x, layers, mm):
    """fit_with_input_grad of a tanh net with DeePMD skips (same width), value and d/dx."""
    saved, h = [], x
    for i, (w, b, *_) in enumerate(layers[:-1]):
        a = torch.tanh(mm(h, w) + b)
        saved.append(a)
        h = a + h if i > 0 else a
    w4, b4 = layers[-1]
    value = h @ w4 + b4
    g = w4.t().expand(len(x), -1)
    for i in reversed(range(len(saved))):
        a = saved[i]
        gz = g * (1 - a * a)
        g_in = mm(gz, layers[i][2] if len(layers[i]) > 2 else layers[i][0].t())
        g = g_in + g if i > 0 else g_in
    return value, g


def fit_rows(out):
    torch.manual_seed(1)
    sizes = [1600, 240, 240, 240]
    layers = []
    for k, n in pairwise(sizes):
        layers.append((torch.randn(k, n, device="cuda") / k ** 0.5, torch.randn(n, device="cuda") * 0.1))
    layers.append((torch.randn(240, 1, device="cuda") / 240 ** 0.5, torch.randn(1, device="cuda")))
    x = torch.randn(65536, 1600, device="cuda") * 0.3
    ref = fit(x.double(), [(w.double(), b.double()) for w, b in layers], torch.mm)

    def mm_split(a, w):  # the weights' split is small work (384k numbers at most)
        return mm3(a, *split(w))

    layers_t = [(w, b, w.t().contiguous()) for w, b in layers[:-1]] + [layers[-1]]
    variants = {"fp32": lambda: fit(x, layers_t, torch.mm), "tf32": lambda: fit(x, layers_t, mm_tf32),
                "split3": lambda: fit(x, layers_t, mm_split)}
    for name, fn in variants.items():
        ms = timed(fn, 20)
        v, g = fn()
        row = dict(case="fit_with_input_grad:65536x1600", variant=name, ms=round(ms, 4),
                   value_err=rel_err(v, ref[0]), grad_err=rel_err(g, ref[1]))
        print(json.dumps(row))
        out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    with open(sys.argv[1], "w") as out:
        gemm_rows(out)
        fit_rows(out)
