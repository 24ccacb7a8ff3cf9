"""dE/dr_ij from dE/dT in a training step: the Triton kernels (`deeppot/kernels/pair_grad.py`) for several tiles
against the PyTorch reference (`analytic.pair_grad`), forward and backward replayed from a CUDA graph as the
training step runs them. One JSON line per (precision, frames, tile): us per forward+backward, the largest
difference from the reference.

    python benchmarks/pair_grad_bench.py [--tiles 16x4 8x4 8x8 4x8] [--frames 1 4]

Shapes of the water example's training batch: 192 atoms, 112 slots (its trimmed list), M1 = 100.
"""

from __future__ import annotations

import argparse
import json
from types import SimpleNamespace

import torch
from embed_kernel_bench import time_graph

from deeppot.kernels import pair_grad as kernels
from deeppot.model import analytic


def inputs(dtype: torch.dtype, nf: int, nloc: int = 192, nnei: int = 112, m1: int = 100):
    gen = torch.Generator(device="cuda").manual_seed(0)

    def rand(*shape):
        return torch.randn(*shape, generator=gen, dtype=dtype, device="cuda")

    coef = rand(nf, nloc, nnei, 3)
    rows = analytic.EnvRows(rand(nf, nloc, nnei, 4), rand(nf, nloc, nnei, 3), coef[..., :1], coef[..., 1:2],
                            coef[..., 2:], rand(nf, nloc, nnei, 4), None)
    leaves = [t.requires_grad_(True) for t in (rand(nf, nloc, nnei, m1), rand(nf, nloc, nnei, m1),
                                               rand(nf, nloc, 4, m1))]
    return SimpleNamespace(sel=[46, 92]), rows, leaves, rand(nf, nloc, nnei, 3)


def graphed_us(fn, d, rows, leaves, o) -> tuple[float, list[torch.Tensor]]:
    """us per replay of forward + backward, and the gradients of the last replay."""
    out = {}

    def body():
        out["grads"] = torch.autograd.grad(fn(d, rows, *leaves), leaves, o)

    return time_graph(body), out["grads"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiles", nargs="+", default=["16x4", "8x4", "8x8", "4x4", "4x8"])
    parser.add_argument("--frames", type=int, nargs="+", default=[1, 4])
    args = parser.parse_args()
    for dtype in (torch.float32, torch.float64):
        for nf in args.frames:
            d, rows, leaves, o = inputs(dtype, nf)
            ref_us, ref = graphed_us(analytic.pair_grad, d, rows, leaves, o)
            case = f"pair_grad:{str(dtype)[6:]}:{nf * 192}"
            print(json.dumps({"case": case, "path": "reference", "us": round(ref_us, 2)}), flush=True)
            for tile in args.tiles:
                slots, warps = map(int, tile.split("x"))
                kernels.TILES[dtype] = (slots, warps)
                us, got = graphed_us(kernels.pair_grad, d, rows, leaves, o)
                diff = max(float((a - b).abs().max() / b.abs().max()) for a, b in zip(got, ref, strict=True))
                print(json.dumps({"case": case, "path": f"kernels {tile}", "us": round(us, 2),
                                  "max_rel_diff": diff}), flush=True)


if __name__ == "__main__":
    main()
