"""Run 144 probe: float32-level tensor-core products as three float16 products ("f16x3": each operand split into a
float16 high part and a float16 remainder scaled by 2^11, `deeppot.kernels.embedding._mm`) against Triton's "tf32x3"
(three TF32 products) and one TF32 pass, in (1) the fitting products (`fitting_gemm._gemm_kernel`, no epilogue,
water's shapes at 65,536 rows) and (2) the uncompressed atom-tile embedding kernels (T and dE/dr up to the reach,
98,304 atoms of compress_bench.py's water-like box, float32). Deviations: from a float64 product (1), from the
float32-exact "ieee" kernel (2), relative to the largest value. One JSON line each.
    python f16_probe.py gemm|tiles [tiles ...]"""

from __future__ import annotations

import json
import sys

import torch
import triton
from compress_bench import box_pairs, model_pair, timed
from triton.testing import do_bench

from deeppot.kernels import atom_tiles, fitting_gemm
from deeppot.kernels.reach import find_reach

GEMM_TILES = [dict(BM=128, BN=64, BK=32, num_warps=4, num_stages=4),
              dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=3),
              dict(BM=128, BN=128, BK=32, num_warps=8, num_stages=4),
              dict(BM=128, BN=64, BK=64, num_warps=4, num_stages=3),
              dict(BM=64, BN=128, BK=32, num_warps=4, num_stages=4),
              dict(BM=128, BN=256, BK=32, num_warps=8, num_stages=3)]


def product(x, w, transposed: bool, name: str) -> None:
    rows, k = x.shape
    m = w.shape[0] if transposed else w.shape[1]
    w_k, w_m = (w.stride(1), w.stride(0)) if transposed else (w.stride(0), w.stride(1))
    ref = x.double() @ (w.double().T if transposed else w.double())
    y = torch.empty(1, rows, m, device=x.device)
    for tile in GEMM_TILES:
        for prec in ("tf32x3", "f16x3", "tf32"):
            grid = (triton.cdiv(rows, tile["BM"]), triton.cdiv(m, tile["BN"]), 1)

            def call(prec=prec, grid=grid, tile=tile):
                fitting_gemm._gemm_kernel[grid](x, w, y, y, y, y, y, y, rows, m, 0, x.stride(0), 0, w_k, w_m,
                                                0, 0, m, K=k, EPILOGUE=0, SKIP=0, HAS_IDT=False, WRITE_OUT=False,
                                                PRECISION=prec, **tile)
            try:
                call()
                dev = float((y[0].double() - ref).abs().max() / ref.abs().max())
                ms = do_bench(call, warmup=25, rep=200)
                print(json.dumps({"product": name, "precision": prec, "tile": tile, "ms": round(ms, 4), "dev": dev}),
                      flush=True)
            except Exception as err:  # a tile that does not fit is a result too
                print(json.dumps({"product": name, "precision": prec, "tile": tile, "error": str(err)[-300:]}),
                      flush=True)


def gemm() -> None:
    torch.manual_seed(0)
    dev = torch.device("cuda")
    rows = 65536
    d = torch.randn(rows, 1600, device=dev) * 0.3
    h = torch.tanh(torch.randn(rows, 240, device=dev))
    gz = torch.randn(rows, 240, device=dev) * 1e-2
    w1 = torch.randn(1600, 240, device=dev) / 40
    w2 = torch.randn(240, 240, device=dev) / 15
    product(d, w1, False, "layer1 D W1 (65536x1600 @ 1600x240)")
    product(h, w2, False, "layer2 h W2 (65536x240 @ 240x240)")
    product(gz, w1, True, "dE/dD gz W1^T (65536x240 @ 240x1600)")


def tiles(specs: list[str]) -> None:
    torch.set_grad_enabled(False)
    sync = torch.cuda.synchronize
    model = model_pair("float32")[0]
    ev, flat, rij, t_bar = box_pairs(model, 98304, torch.device("cuda"))
    d, ct = ev.model.descriptor, flat.center_type
    reach = find_reach(d, ct, flat.neighbor_owner_and_type(0, flat.ncentre)[1])
    t_ref = atom_tiles.descriptor_t(d, rij, ct, precision="ieee", reach=reach)
    g_ref = atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, precision="ieee", reach=reach)
    for spec in specs:  # kernel:atoms,slots,warps
        kernel, tile = spec.split(":")
        atom_tiles.TILES[torch.float32][kernel] = tuple(int(v) for v in tile.split(","))
        for prec in ("tf32x3", "f16x3", "tf32"):
            if kernel == "t":
                def call(prec=prec):
                    return atom_tiles.descriptor_t(d, rij, ct, precision=prec, reach=reach)
                ref = t_ref
            else:
                def call(prec=prec):
                    return atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, precision=prec, reach=reach)
                ref = g_ref
            try:
                out = call()
                ms = timed(call, sync)
                print(json.dumps({"kernel": kernel, "tile": tile, "precision": prec, "ms_reach": round(ms, 3),
                                  "dev": float((out - ref).abs().max() / ref.abs().max())}), flush=True)
            except Exception as err:
                print(json.dumps({"kernel": kernel, "tile": tile, "precision": prec, "error": str(err)[-300:]}),
                      flush=True)


if __name__ == "__main__":
    gemm() if sys.argv[1] == "gemm" else tiles(sys.argv[2:])
