"""Run 158 probe: what splitting the float32 operands into float16 parts costs the fitting products (f16x3).

The fitting nets' f16x3 GEMMs (`deeppot.kernels.fitting_gemm._gemm_kernel`) load float32 tiles and split each
operand into float16 high and low parts in registers every k step. Here the same product (no epilogue) with the
weights split beforehand ("pre_b"), with both operands split beforehand ("pre_ab": what the kernels could do if the
layer below wrote its output as two float16 arrays), against the split in registers ("in_regs"), for water's four
products at 65,536 rows; ms by triton.testing.do_bench, largest deviation from a float64 product relative to the
largest value. Usage: python gemm_split.py > out.jsonl
"""
import functools
import json

import torch
import triton
import triton.language as tl

from deeppot.kernels.embedding import _f16_parts


@triton.jit
def _probe_kernel(x_ptr, xh_ptr, xl_ptr, w_ptr, wh_ptr, wl_ptr, y_ptr, rows, m, w_k, w_m, K: tl.constexpr,
                  PRE_A: tl.constexpr, PRE_B: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * BM + tl.arange(0, BM)[:, None]
    col = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]
    kk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        amask = (row < rows) & (kk[None, :] < K - k0)
        bmask = (kk[:, None] < K - k0) & (col < m)
        at = row * K + k0 + kk[None, :]
        bt = (k0 + kk[:, None]) * w_k + col * w_m
        if PRE_A:
            a_hi = tl.load(xh_ptr + at, mask=amask, other=0.0)
            a_lo = tl.load(xl_ptr + at, mask=amask, other=0.0)
        else:
            a_hi, a_lo = _f16_parts(tl.load(x_ptr + at, mask=amask, other=0.0))
        if PRE_B:
            b_hi = tl.load(wh_ptr + (k0 + kk[:, None]) * m + col, mask=bmask, other=0.0)
            b_lo = tl.load(wl_ptr + (k0 + kk[:, None]) * m + col, mask=bmask, other=0.0)
        else:
            b_hi, b_lo = _f16_parts(tl.load(w_ptr + bt, mask=bmask, other=0.0))
        c = tl.dot(a_hi, b_lo, tl.dot(a_lo, b_hi))
        acc += tl.dot(a_hi, b_hi, c * (1.0 / 2048.0))
    tl.store(y_ptr + row * m + col, acc, mask=(row < rows) & (col < m))


def parts(x):
    hi = x.half()
    return hi.contiguous(), ((x - hi.float()) * 2048.0).half().contiguous()


def main():
    torch.manual_seed(0)
    rows = 65536
    for name, k, m, transposed in (("layer1", 1600, 240, False), ("layer2", 240, 240, False),
                                   ("grad240", 240, 240, True), ("dE_dD", 240, 1600, True)):
        x = torch.randn(rows, k, device="cuda").tanh()
        w = torch.randn(m, k, device="cuda") / k ** 0.5 if transposed else torch.randn(k, m, device="cuda") / k ** 0.5
        w_k, w_m = (w.stride(1), w.stride(0)) if transposed else (w.stride(0), w.stride(1))
        wk = (w.t() if transposed else w).contiguous()  # (k, m)
        xh, xl = parts(x)
        wh, wl = parts(wk)
        ref = x.double() @ wk.double()
        y = torch.empty(rows, m, device="cuda")
        for variant, pre_a, pre_b in (("in_regs", False, False), ("pre_b", False, True), ("pre_ab", True, True)):
            for bm, bn, bk, warps, stages in ((128, 128, 64, 8, 3), (128, 128, 32, 4, 4), (128, 256, 64, 8, 3)):
                grid = (triton.cdiv(rows, bm), triton.cdiv(m, bn))
                call = functools.partial(_probe_kernel[grid], x, xh, xl, w, wh, wl, y, rows, m, w_k, w_m, K=k,
                                         PRE_A=pre_a, PRE_B=pre_b, BM=bm, BN=bn, BK=bk, num_warps=warps,
                                         num_stages=stages)
                try:
                    call()
                    ms = triton.testing.do_bench(call, warmup=25, rep=200)
                    err = ((y.double() - ref).abs().max() / ref.abs().max()).item()
                    row = dict(product=name, variant=variant, tile=[bm, bn, bk, warps, stages], ms=ms, deviation=err)
                except Exception as e:  # out of shared memory and the like: recorded, not fatal
                    row = dict(product=name, variant=variant, tile=[bm, bn, bk, warps, stages], error=str(e)[:120])
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
