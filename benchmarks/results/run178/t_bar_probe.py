"""Run 178: dE/dT of one type's rows through W_0 (water's shapes: T (98,304, 4, 100), W_0 (1, 1600, 240), 32,768
and 65,536 rows by index), as the product then the way back (`fitting_gemm.product_t`, then
`descriptor_matrix.t_bar_from_desc_grad`) against `fitting_t_bar.t_bar_product` (dE/dD never stored) at a few
tiles. One JSON line each, with the largest deviation from the two steps relative to their largest value.
    PYTHONPATH=$TREE python t_bar_probe.py   (on a tree with fitting_t_bar.patch applied; not kept)"""
import json
from functools import partial

import torch

from deeppot.kernels import descriptor_matrix, fitting_gemm, fitting_t_bar

DEV = torch.device("cuda")
TILES = {"128,128,64,8,3": (128, 128, 64, 8, 3), "128,128,32,8,3": (128, 128, 32, 8, 3),
         "64,128,64,4,3": (64, 128, 64, 4, 3), "128,128,32,8,4": (128, 128, 32, 8, 4)}


def timed(fn, reps=30) -> float:
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def two_steps(gz, w0, t_mat, idx, out):
    d_desc = fitting_gemm.product_t(gz[None], w0, "f16x3")[0]
    descriptor_matrix.t_bar_from_desc_grad(d_desc, t_mat, idx, out)


g = torch.Generator(device=DEV).manual_seed(0)
t_mat = torch.randn(98304, 4, 100, device=DEV, generator=g) * 0.3
w0 = torch.randn(1, 1600, 240, device=DEV, generator=g) * 0.03
kept = dict(fitting_t_bar.TILE)
for rows in (32768, 65536):
    idx = torch.randperm(98304, device=DEV, generator=g)[:rows].sort().values
    gz = torch.randn(rows, 240, device=DEV, generator=g) * 0.1
    want = torch.zeros_like(t_mat)
    two_steps(gz, w0, t_mat, idx, want)
    scale = want.abs().max().item()
    print(json.dumps({"rows": rows, "way": "two steps", "ms": timed(partial(two_steps, gz, w0, t_mat, idx, want))}),
          flush=True)
    for name, (bm, bn, bk, warps, stages) in TILES.items():
        fitting_t_bar.TILE.update(BM=bm, BN=bn, BK=bk, num_warps=warps, num_stages=stages)
        got = torch.zeros_like(t_mat)
        row = {"rows": rows, "way": "fused", "tile": name}
        try:
            fitting_t_bar.t_bar_product(gz, w0, t_mat, idx, got, "f16x3")
            row["dev"] = (got - want).abs().max().item() / scale
            row["ms"] = timed(partial(fitting_t_bar.t_bar_product, gz, w0, t_mat, idx, got, "f16x3"))
        except Exception as err:  # a tile that does not fit is a result too
            row["error"] = f"{type(err).__name__}: {str(err)[-200:]}"
        fitting_t_bar.TILE.update(kept)
        print(json.dumps(row), flush=True)
