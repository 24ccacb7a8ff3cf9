"""Run 172 probe: the 1600-wide fitting product with W split in the kernel (MODE 0), W split before (1), or x and W
both split before (2), two running sums each; tanh epilogue. Timed by gemm_variants.py."""
import triton
import triton.language as tl

from deeppot.kernels.activation import _tanh
from deeppot.kernels.embedding import _f16_parts


@triton.jit
def _split_gemm(x_ptr, xl_ptr, w_ptr, wl_ptr, y_ptr, b_ptr, rows, m, x_row, w_k, w_m, K: tl.constexpr,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, MODE: tl.constexpr):
    """MODE 0: both split in registers, two running accumulators; 1: w pre-split (fp16 hi/lo); 2: both pre-split."""
    row = tl.program_id(0).to(tl.int64) * BM + tl.arange(0, BM)[:, None]
    col = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]
    kk = tl.arange(0, BK)
    xs = row * x_row + kk[None, :]
    ws = kk[:, None] * w_k + col * w_m
    hi = tl.zeros((BM, BN), dtype=tl.float32)
    lo = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        xm = (row < rows) & (kk[None, :] < K - k0)
        wm = (kk[:, None] < K - k0) & (col < m)
        if MODE == 2:
            x_hi = tl.load(x_ptr + xs, mask=xm, other=0.0)
            x_lo = tl.load(xl_ptr + xs, mask=xm, other=0.0)
        else:
            x_hi, x_lo = _f16_parts(tl.load(x_ptr + xs, mask=xm, other=0.0))
        if MODE == 0:
            w_hi, w_lo = _f16_parts(tl.load(w_ptr + ws, mask=wm, other=0.0))
        else:
            w_hi = tl.load(w_ptr + ws, mask=wm, other=0.0)
            w_lo = tl.load(wl_ptr + ws, mask=wm, other=0.0)
        hi = tl.dot(x_hi, w_hi, hi)
        lo = tl.dot(x_lo, w_hi, tl.dot(x_hi, w_lo, lo))
        xs += BK
        ws += BK * w_k
    acc = hi + lo * (1.0 / 2048.0)
    ok = (row < rows) & (col < m)
    a = _tanh(acc + tl.load(b_ptr + col, mask=col < m, other=0.0))
    tl.store(y_ptr + row * m + col, a, mask=ok)
