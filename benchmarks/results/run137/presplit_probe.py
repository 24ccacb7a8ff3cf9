"""Run 137 probe: the fitting products' float32-level tensor-core GEMM (`deeppot.kernels.fitting_gemm._gemm_kernel`
without epilogue) three ways: Triton's input_precision="tf32x3" (both operands split in registers, every k step),
three explicit TF32 dots with W split once beforehand (W_hi = W with its low 13 mantissa bits cleared, W_lo = W - W_hi,
so only x is split in the kernel), and one TF32 pass (the lower bound, not float32-accurate). Water's products at
65,536 rows; one JSON line each with ms and the deviation from a float64 product relative to its largest value."""

from __future__ import annotations

import json

import torch
import triton
import triton.language as tl
from triton.testing import do_bench


@triton.jit
def _split(x):
    """x = hi + lo with hi exact in TF32 (the tensor cores read a float32 operand's top 19 bits)."""
    hi = (x.to(tl.uint32, bitcast=True) & 0xFFFFE000).to(tl.float32, bitcast=True)
    return hi, x - hi


@triton.jit
def _probe_kernel(x_ptr, w_ptr, wlo_ptr, y_ptr, rows, m, x_row, w_k, w_m, K: tl.constexpr, MODE: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * BM + tl.arange(0, BM)[:, None]
    col = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]
    kk = tl.arange(0, BK)
    xs = x_ptr + row * x_row + kk[None, :]
    ws = w_ptr + kk[:, None] * w_k + col * w_m
    wls = wlo_ptr + kk[:, None] * w_k + col * w_m
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        xt = tl.load(xs, mask=(row < rows) & (kk[None, :] < K - k0), other=0.0)
        wmask = (kk[:, None] < K - k0) & (col < m)
        wt = tl.load(ws, mask=wmask, other=0.0)
        if MODE == 0:
            acc = tl.dot(xt, wt, acc, input_precision="tf32x3")
        elif MODE == 1:
            wl = tl.load(wls, mask=wmask, other=0.0)
            xh, xl = _split(xt)
            acc = tl.dot(xl, wt, acc, input_precision="tf32")
            acc = tl.dot(xh, wl, acc, input_precision="tf32")
            acc = tl.dot(xh, wt, acc, input_precision="tf32")
        else:
            acc = tl.dot(xt, wt, acc, input_precision="tf32")
        xs += BK
        ws += BK * w_k
        wls += BK * w_k
    tl.store(y_ptr + row * m + col, acc, mask=(row < rows) & (col < m))


TILES = [dict(BM=128, BN=64, BK=32, num_warps=4, num_stages=4), dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=3),
         dict(BM=128, BN=128, BK=32, num_warps=8, num_stages=4), dict(BM=128, BN=64, BK=64, num_warps=4, num_stages=3),
         dict(BM=64, BN=128, BK=32, num_warps=4, num_stages=4)]


def hi_part(w: torch.Tensor) -> torch.Tensor:
    return (w.view(torch.int32) & -8192).view(torch.float32)


def run(x, w, transposed: bool, name: str) -> None:
    rows, k = x.shape
    m = w.shape[0] if transposed else w.shape[1]
    w_k, w_m = (w.stride(1), w.stride(0)) if transposed else (w.stride(0), w.stride(1))
    whi = hi_part(w)
    wlo = w - whi
    ref = x.double() @ (w.double().T if transposed else w.double())
    y = torch.empty(rows, m, device=x.device)
    for tile in TILES:
        for mode, (label, wa) in enumerate((("tf32x3", w), ("presplit", whi), ("tf32", w))):
            grid = (triton.cdiv(rows, tile["BM"]), triton.cdiv(m, tile["BN"]))
            def call(wa=wa, mode=mode, grid=grid, tile=tile):
                _probe_kernel[grid](x, wa, wlo, y, rows, m, x.stride(0), w_k, w_m, K=k, MODE=mode, **tile)
            try:
                call()
                dev = float((y.double() - ref).abs().max() / ref.abs().max())
                ms = do_bench(call, warmup=25, rep=200)
                print(json.dumps({"product": name, "mode": label, "tile": tile, "ms": round(ms, 4), "dev": dev}),
                      flush=True)
            except Exception as err:  # a tile that does not fit is a result too
                print(json.dumps({"product": name, "mode": label, "tile": tile, "error": str(err)[-300:]}), flush=True)


def main() -> None:
    torch.manual_seed(0)
    dev = torch.device("cuda")
    rows = 65536
    d = torch.randn(rows, 1600, device=dev)
    h = torch.tanh(torch.randn(rows, 240, device=dev))
    w1 = torch.randn(1600, 240, device=dev) / 40
    w2 = torch.randn(240, 240, device=dev) / 15
    run(d, w1, False, "layer1 D W1 (65536x1600 @ 1600x240)")
    run(h, w2, False, "layer2 h W2 (65536x240 @ 240x240)")
    run(h, w1, True, "dE/dD gz W1^T (65536x240 @ 240x1600)")


if __name__ == "__main__":
    main()
