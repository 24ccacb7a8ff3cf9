"""Run 244 probe: the fitting products' f16x3 GEMM with x split beforehand (float16 parts read from memory, both
tensor-core operands through shared memory) against `fitting_gemm`'s kernel, which splits x's tile in registers in
every k step. Water's shapes at ROWS rows (98,304 atoms' worth of one type's rows plus the other's: two nets):
layer 0 (1600 -> 240), a hidden layer (240 -> 240), dE/dD (240 -> 1600, W^T's parts made beforehand). No epilogue
(the GEMM alone); outputs compared with the kept kernel's. Prints one JSON line per (shape, variant, tile)."""
import json
import sys
from functools import partial

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

from deeppot.kernels import fitting_gemm
from deeppot.kernels.precision import _split


@triton.jit
def _presplit_kernel(xh_ptr, xl_ptr, wh_ptr, wl_ptr, y_ptr, rows, m, K: tl.constexpr,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, ONE_ACC: tl.constexpr):
    net = tl.program_id(1).to(tl.int64)
    tile = tl.program_id(0)
    row = (tile // tl.cdiv(m, BN)).to(tl.int64) * BM + tl.arange(0, BM)[:, None]
    col = (tile % tl.cdiv(m, BN)) * BN + tl.arange(0, BN)[None, :]
    kk = tl.arange(0, BK)
    xs = net * rows * K + row * K + kk[None, :]
    ws = net * K * m + kk[:, None] * m + col
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    lo = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        x_ok = (row < rows) & (kk[None, :] < K - k0)
        w_ok = (kk[:, None] < K - k0) & (col < m)
        x_hi = tl.load(xh_ptr + xs, mask=x_ok, other=0.0)
        x_lo = tl.load(xl_ptr + xs, mask=x_ok, other=0.0)
        w_hi = tl.load(wh_ptr + ws, mask=w_ok, other=0.0)
        w_lo = tl.load(wl_ptr + ws, mask=w_ok, other=0.0)
        acc = tl.dot(x_hi, w_hi, acc)
        lo = tl.dot(x_lo, w_hi, tl.dot(x_hi, w_lo, lo))
        xs += BK
        ws += BK * m
    acc += lo * (1.0 / 2048.0)
    tl.store(y_ptr + net * rows * m + row * m + col, acc, mask=(row < rows) & (col < m))


@triton.jit
def _split_kernel(x_ptr, xh_ptr, xl_ptr, n, BLOCK: tl.constexpr):
    at = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + at, mask=at < n)
    hi = x.to(tl.float16)
    tl.store(xh_ptr + at, hi, mask=at < n)
    tl.store(xl_ptr + at, ((x - hi.to(tl.float32)) * 2048.0).to(tl.float16), mask=at < n)


def presplit(xh, xl, wh, wl, y, BM, BN, BK, warps, stages):
    nets, rows, k = xh.shape
    m = wh.shape[2]
    grid = (triton.cdiv(m, BN) * triton.cdiv(rows, BM), nets)
    _presplit_kernel[grid](xh, xl, wh, wl, y, rows, m, K=k, BM=BM, BN=BN, BK=BK, ONE_ACC=False,
                           num_warps=warps, num_stages=stages)


def main(rows: int) -> None:
    torch.manual_seed(0)
    dev = "cuda"
    tiles = [(128, 128, 64, 8, 3), (128, 128, 64, 8, 4), (128, 256, 64, 8, 3), (128, 256, 32, 8, 4),
             (256, 128, 64, 8, 3), (128, 128, 32, 4, 4), (64, 256, 64, 8, 3), (128, 64, 64, 4, 4)]
    for name, k, m in (("layer0", 1600, 240), ("hidden", 240, 240), ("dE_dD", 240, 1600)):
        x = (torch.rand(2, rows // 2, k, device=dev) - 0.5) * 0.3
        w = torch.randn(2, k, m, device=dev) / k ** 0.5
        y_ref = torch.empty(2, rows // 2, m, device=dev)
        ms = do_bench(partial(fitting_gemm._launch, x, w, False, 0, y_ref, y_ref, "f16x3"), warmup=50, rep=300)
        print(json.dumps(dict(shape=name, rows=rows, variant="kept (x split in registers)", ms=round(ms, 4))),
              flush=True)
        xh, xl = _split(x)
        xh, xl = xh.contiguous(), xl.contiguous()
        wh, wl = _split(w.contiguous())
        split = partial(_split_kernel[(triton.cdiv(x.numel(), 4096),)], x, xh, xl, x.numel(), BLOCK=4096)
        ms_split = do_bench(split, warmup=20, rep=100)
        print(json.dumps(dict(shape=name, rows=rows, variant="split alone", ms=round(ms_split, 4))), flush=True)
        for t in tiles:
            y = torch.empty_like(y_ref)
            try:
                presplit(xh, xl, wh, wl, y, *t)
                torch.cuda.synchronize()
                ms = do_bench(partial(presplit, xh, xl, wh, wl, y, *t), warmup=50, rep=300)
                diff = (y - y_ref).abs().max().item() / y_ref.abs().max().item()
                print(json.dumps(dict(shape=name, rows=rows, variant="presplit", tile=t, ms=round(ms, 4),
                                      rel_diff=diff)), flush=True)
            except Exception as e:  # a tile that does not fit shared memory
                print(json.dumps(dict(shape=name, variant="presplit", tile=t, error=str(e)[:200])), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 98304)
