"""Run 252: the fitting nets' f16x3 products (`fitting_gemm._gemm_kernel`, no epilogue) against a persistent
variant that reads x and W's parts by TMA and walks its tiles in a loop (`tl.range(flatten=...)`, so that a tile's
store overlaps the next one's loads), on water's shapes: the 1600-wide first layer, dE/dD (240 -> 1600) and a
240-wide layer, at 65,536 rows (water's hydrogen). A probe: the variant is not in deeppot.

Usage (GPU, repository root): python gemm_probe.py [--rows 65536] [--reps 30]
"""
import argparse
import json

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from deeppot.kernels import fitting_gemm
from deeppot.kernels.embedding import _f16_parts
from deeppot.kernels.precision import weight_parts


@triton.jit
def _persistent_kernel(x_desc, wh_desc, wl_desc, y_desc, rows, m, K: tl.constexpr, BM: tl.constexpr,
                       BN: tl.constexpr, BK: tl.constexpr, PROGRAMS: tl.constexpr, FLATTEN: tl.constexpr):
    cols = tl.cdiv(m, BN)
    tiles = tl.cdiv(rows, BM) * cols
    for tile in tl.range(tl.program_id(0), tiles, PROGRAMS, flatten=FLATTEN):
        r0 = (tile // cols) * BM
        c0 = (tile % cols) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        lo = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            x_hi, x_lo = _f16_parts(x_desc.load([r0, k0]))
            w_hi = wh_desc.load([k0, c0])
            w_lo = wl_desc.load([k0, c0])
            acc = tl.dot(x_hi, w_hi, acc)
            lo = tl.dot(x_lo, w_hi, tl.dot(x_hi, w_lo, lo))
        y_desc.store([r0, c0], acc + lo * (1.0 / 2048.0))


def persistent(x, w_hi, w_lo, y, BM=128, BN=128, BK=64, warps=8, stages=3, flatten=True, programs=None):
    rows, k = x.shape
    m = y.shape[1]
    programs = programs or torch.cuda.get_device_properties(0).multi_processor_count
    descs = (TensorDescriptor.from_tensor(x, [BM, BK]), TensorDescriptor.from_tensor(w_hi, [BK, BN]),
             TensorDescriptor.from_tensor(w_lo, [BK, BN]), TensorDescriptor.from_tensor(y, [BM, BN]))
    grid = (min(programs, triton.cdiv(rows, BM) * triton.cdiv(m, BN)),)
    _persistent_kernel[grid](*descs, rows, m, K=k, BM=BM, BN=BN, BK=BK, PROGRAMS=grid[0], FLATTEN=flatten,
                             num_warps=warps, num_stages=stages)


def timed(fn, reps):
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


VARIANTS = {"persistent_flat": {}, "persistent": dict(flatten=False), "persistent_2x": dict(programs=264),
            "persistent_s4_bk32": dict(BK=32, stages=4), "persistent_bn64": dict(BN=64, warps=4, stages=4)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=65536)
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    gen = torch.Generator(device="cuda").manual_seed(0)
    for name, k, m, transposed in (("layer0", 1600, 240, False), ("dE/dD", 240, 1600, True),
                                   ("hidden", 240, 240, False)):
        x = torch.randn(1, args.rows, k, device="cuda", generator=gen) * 0.3
        w = torch.randn(1, m, k, device="cuda", generator=gen) * 0.05 if transposed else \
            torch.randn(1, k, m, device="cuda", generator=gen) * 0.05
        y = x.new_empty(1, args.rows, m)
        base = lambda: fitting_gemm._launch(x, w, transposed, fitting_gemm.NONE_EPILOGUE, y, y, "f16x3")  # noqa
        ms = timed(base, args.reps)
        ref = y.clone()
        exact = torch.bmm(x.double(), (w.transpose(1, 2) if transposed else w).double())
        flops = 2 * args.rows * k * m * 3
        print(json.dumps({"product": name, "variant": "kept", "ms": round(ms, 4), "tflops": round(flops / ms / 1e9, 1),
                          "err": float((ref - exact).abs().max() / exact.abs().max())}), flush=True)
        w_hi, w_lo = (p[0] for p in weight_parts(w, transposed))
        for vname, kw in VARIANTS.items():
            out = torch.zeros_like(y[0])
            try:
                ms = timed(lambda: persistent(x[0], w_hi, w_lo, out, **kw), args.reps)  # noqa: B023
            except Exception as e:  # a tile that does not fit: say so and go on
                print(json.dumps({"product": name, "variant": vname, "error": repr(e)[:200]}), flush=True)
                continue
            print(json.dumps({"product": name, "variant": vname, "ms": round(ms, 4),
                              "tflops": round(flops / ms / 1e9, 1),
                              "d_kept": float((out - ref[0]).abs().max() / ref.abs().max())}), flush=True)


if __name__ == "__main__":
    main()
