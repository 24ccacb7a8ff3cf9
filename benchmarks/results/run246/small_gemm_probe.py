"""Run 246: the training step's fitting products at a water batch's size (two nets, 64 O and 128 H rows padded to
128 a net) as cuBLAS runs them in the default step (torch.bmm; the 1600-wide product split along k by
`analytic.split_k_matmul`) against `fitting_gemm`'s Triton kernel on small tiles (tf32x3 and f16x3 products, no
epilogue). Each variant is captured 20 times in one CUDA graph and replayed; us a product. Prints JSON lines."""
import json
from functools import partial

import torch

from deeppot.kernels import fitting_gemm
from deeppot.model import analytic

ROWS, REPEAT = 128, 20


def per_call_us(fn) -> float:
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(REPEAT):
            fn()
    for _ in range(5):
        graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(50):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / (50 * REPEAT)


def triton_product(x, w, y, precision, tile):
    saved = dict(fitting_gemm.TILES[0]), dict(fitting_gemm.F16X3_TILES[0])
    fitting_gemm.TILES[0].update(tile)
    fitting_gemm.F16X3_TILES[0].update(tile)
    try:
        fitting_gemm._launch(x, w, False, 0, y, y, precision)
    finally:
        fitting_gemm.TILES[0].clear(), fitting_gemm.TILES[0].update(saved[0])
        fitting_gemm.F16X3_TILES[0].clear(), fitting_gemm.F16X3_TILES[0].update(saved[1])


def main() -> None:
    torch.manual_seed(0)
    tiles = [dict(BM=bm, BN=bn, BK=bk, num_warps=4, num_stages=3)
             for bm, bn, bk in ((64, 64, 32), (32, 64, 64), (64, 32, 64), (128, 64, 32))]
    for name, k, m in (("layer0", 1600, 240), ("hidden", 240, 240), ("dE_dD", 240, 1600)):
        x = (torch.rand(2, ROWS, k, device="cuda") - 0.5) * 0.3
        w = torch.randn(2, k, m, device="cuda") / k ** 0.5
        ref = torch.bmm(x, w)
        rows = [("cuBLAS bmm", partial(torch.bmm, x, w), None)]
        if k > 1000:
            rows.append(("cuBLAS split along k", partial(analytic.split_k_matmul, x, w), None))
        for precision in ("tf32x3", "f16x3"):
            for tile in tiles:
                y = torch.empty_like(ref)
                rows.append((f"triton {precision} {tuple(tile.values())}", partial(triton_product, x, w, y, precision,
                                                                                   tile), y))
        for label, fn, out in rows:
            try:
                us = per_call_us(fn)
                got = fn() if out is None else (fn(), out)[1]
                dev = float((got - ref).abs().max() / ref.abs().max())
                print(json.dumps(dict(shape=name, rows_per_net=ROWS, variant=label, us=round(us, 2), dev=dev)),
                      flush=True)
            except Exception as err:
                print(json.dumps(dict(shape=name, variant=label, error=str(err)[:200])), flush=True)


if __name__ == "__main__":
    main()
