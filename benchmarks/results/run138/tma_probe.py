"""Run 138 probe: the fitting products' float32-level GEMM (`deeppot.kernels.fitting_gemm._gemm_kernel` without
epilogue) with its operands read four ways: as now (pointer loads masked along k every step), without the k masks
where K is a multiple of the k step, and through TMA tensor descriptors (tf32x3, and one TF32 pass as the bound).
Water's products at 65,536 rows; one JSON line each: ms and the deviation from a float64 product relative to its
largest value. Usage: python tma_probe.py [cpu | wide | ws] (wide: run 139's tiles; ws: run 143's warp
specialisation; cpu: small shapes under TRITON_INTERPRET=1, correctness only)."""

from __future__ import annotations

import json
import sys

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _pointer_kernel(x_ptr, w_ptr, y_ptr, rows, m, x_row, w_k, w_m, K: tl.constexpr, EVEN_K: tl.constexpr,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * BM + tl.arange(0, BM)[:, None]
    col = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]
    kk = tl.arange(0, BK)
    xs = x_ptr + row * x_row + kk[None, :]
    ws = w_ptr + kk[:, None] * w_k + col * w_m
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        if EVEN_K:
            xt = tl.load(xs, mask=row < rows, other=0.0)
            wt = tl.load(ws, mask=col < m, other=0.0)
        else:
            xt = tl.load(xs, mask=(row < rows) & (kk[None, :] < K - k0), other=0.0)
            wt = tl.load(ws, mask=(kk[:, None] < K - k0) & (col < m), other=0.0)
        acc = tl.dot(xt, wt, acc, input_precision="tf32x3")
        xs += BK
        ws += BK * w_k
    tl.store(y_ptr + row * m + col, acc, mask=(row < rows) & (col < m))


@triton.jit
def _tma_kernel(x_desc, w_desc, y_ptr, rows, m, K: tl.constexpr, TRANS: tl.constexpr, PRECISION: tl.constexpr,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, WS: tl.constexpr = False):
    r0 = tl.program_id(0) * BM
    c0 = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in tl.range(0, K, BK, warp_specialize=WS):  # WS: Triton's automatic warp specialisation (run 143)
        xt = x_desc.load([r0, k0])
        if TRANS:  # noqa: SIM108 (Triton: a constexpr branch) W^T's tile is the transposed tile of W (n, k), whose rows are contiguous
            wt = tl.trans(w_desc.load([c0, k0]))
        else:
            wt = w_desc.load([k0, c0])
        acc = tl.dot(xt, wt, acc, input_precision=PRECISION)
    row = r0 + tl.arange(0, BM)[:, None]
    col = c0 + tl.arange(0, BN)[None, :]
    tl.store(y_ptr + row.to(tl.int64) * m + col, acc, mask=(row < rows) & (col < m))


TILES = [dict(BM=128, BN=64, BK=32, num_warps=4, num_stages=4), dict(BM=128, BN=128, BK=32, num_warps=8, num_stages=4),
         dict(BM=128, BN=64, BK=64, num_warps=4, num_stages=3), dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=3),
         dict(BM=128, BN=128, BK=32, num_warps=4, num_stages=4)]
WARP_SPECIALIZE = sys.argv[1:] == ["ws"]  # run 143: the TMA kernel with and without warp specialisation
if sys.argv[1:] == ["wide"]:  # run 139: a column tile as wide as the layer (240 -> 256), so x is read once
    TILES = [dict(BM=bm, BN=bn, BK=bk, num_warps=w, num_stages=st) for bm, bn, bk, w, st in
             ((128, 64, 32, 4, 4), (64, 256, 32, 8, 3), (64, 256, 32, 4, 3), (128, 256, 32, 8, 3),
              (128, 256, 16, 8, 4), (64, 256, 16, 4, 4), (128, 256, 32, 8, 2))]


def variants(x, w, transposed, y, tile):
    """(label, launch) of each way to compute x W (or x W^T), y (rows, m)."""
    rows, k = x.shape
    m = y.shape[1]
    w_k, w_m = (w.stride(1), w.stride(0)) if transposed else (w.stride(0), w.stride(1))
    grid = (triton.cdiv(rows, tile["BM"]), triton.cdiv(m, tile["BN"]))
    bm, bn, bk = tile["BM"], tile["BN"], tile["BK"]
    x_desc = TensorDescriptor.from_tensor(x, [bm, bk])
    w_desc = TensorDescriptor.from_tensor(w, [bn, bk] if transposed else [bk, bn])
    out = [("pointers", lambda: _pointer_kernel[grid](x, w, y, rows, m, x.stride(0), w_k, w_m, K=k, EVEN_K=False,
                                                      **tile))]
    if k % bk == 0:
        out.append(("pointers_even_k", lambda: _pointer_kernel[grid](x, w, y, rows, m, x.stride(0), w_k, w_m, K=k,
                                                                     EVEN_K=True, **tile)))
    for precision in ("tf32x3", "tf32"):
        out.append((f"tma_{precision}", lambda p=precision: _tma_kernel[grid](x_desc, w_desc, y, rows, m, K=k,
                                                                             TRANS=transposed, PRECISION=p, **tile)))
    if WARP_SPECIALIZE:
        out = out[-2:] + [(f"{label}_ws", lambda p=p: _tma_kernel[grid](x_desc, w_desc, y, rows, m, K=k,
                                                                      TRANS=transposed, PRECISION=p, WS=True, **tile))
                          for label, p in (("tma_tf32x3", "tf32x3"), ("tma_tf32", "tf32"))]
    return out


def run(x, w, transposed: bool, name: str, bench) -> None:
    ref = x.double() @ (w.double().T if transposed else w.double())
    y = torch.empty(ref.shape, device=x.device)
    for tile in TILES:
        for label, call in variants(x, w, transposed, y, tile):
            row = {"product": name, "mode": label, "tile": tile}
            try:
                y.fill_(float("nan"))
                call()
                row["dev"] = float((y.double() - ref).abs().max() / ref.abs().max())
                if bench is not None:
                    row["ms"] = round(bench(call), 4)
            except Exception as err:  # a tile that does not fit is a result too
                row["error"] = str(err)[-300:]
            print(json.dumps(row), flush=True)


def main() -> None:
    cpu = sys.argv[1:] == ["cpu"]  # "wide": run 139's tiles
    torch.manual_seed(0)
    dev = torch.device("cpu" if cpu else "cuda")
    if not cpu:  # device-side TMA descriptors need nothing; host-side ones need no allocator
        from triton.testing import do_bench

        def bench(call):
            return do_bench(call, warmup=25, rep=200)
    else:
        bench = None
        del TILES[1:]
    rows, k1, n = (300, 64, 48) if cpu else (65536, 1600, 240)
    d = torch.randn(rows, k1, device=dev)
    h = torch.tanh(torch.randn(rows, n, device=dev))
    w1 = torch.randn(k1, n, device=dev) / 40
    w2 = torch.randn(n, n, device=dev) / 15
    run(d, w1, False, "layer1 D W1", bench)
    run(h, w2, False, "layer2 h W2", bench)
    run(h, w1, True, "dE/dD gz W1^T", bench)


if __name__ == "__main__":
    main()
