"""Embedding-net kernels alone: the fused Triton pair against the PyTorch reference, forward + weight backward.

Prints one JSON line per variant: microseconds per (forward, backward) pair, replayed from a CUDA graph so that
launch overhead counts as it does in training. Shapes follow a benchmark input (default: water, one frame).
    python benchmarks/embed_kernel_bench.py [--case water] [--precision float32] [--configs 32:4:ieee 32:8:tf32]
"""

from __future__ import annotations

import argparse
import json

import torch

from deeppot.kernels import embedding
from deeppot.model import analytic
from deeppot.model.descriptor import DescrptSeA

CASES = {  # natoms per type, sel, type_one_side
    "water": ([64, 128], [46, 92], True),
    "copper": ([108], [96], False),
    "alloy": ([64, 64, 64], [80, 80, 80], False),
}


def setup(case: str, dtype: torch.dtype):
    counts, sel, one_side = CASES[case]
    d = DescrptSeA(len(sel), sel, 6.0, 0.5, [25, 50, 100], 16, type_one_side=one_side, dtype=dtype, seed=1).cuda()
    center_type = torch.repeat_interleave(torch.arange(len(counts)), torch.tensor(counts)).cuda()[None]
    nloc = center_type.shape[1]
    rr = torch.randn(1, nloc, sum(sel), 4, dtype=dtype, device="cuda")
    return d, rr, center_type


def time_graph(fn, iters: int = 200) -> float:
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return 1e3 * start.elapsed_time(end) / iters


def step_fn(d, rr, center_type, embed):
    params = list(d.nets.parameters())
    a = torch.randn(*rr.shape[:3], d.neuron[-1], dtype=rr.dtype, device="cuda")

    def fn():
        g, dg = embed(d, rr, center_type)
        torch.autograd.grad((g * a).sum() + (dg * a).sum(), params)

    return fn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="water", choices=sorted(CASES))
    parser.add_argument("--precision", default="float32", choices=["float32", "float64"])
    parser.add_argument("--configs", nargs="*", default=["32:4:ieee", "32:8:ieee", "32:8:tf32x3", "32:8:tf32"],
                        help="BLOCK_J:num_warps:input_precision triples to try")
    args = parser.parse_args()
    dtype = getattr(torch, args.precision)
    d, rr, center_type = setup(args.case, dtype)
    base = {"case": args.case, "precision": args.precision}
    us = time_graph(step_fn(d, rr, center_type, analytic.embed_all))
    print(json.dumps({**base, "variant": "pytorch", "us_fwd_bwd": round(us, 1)}), flush=True)
    for cfg in args.configs:
        block, warps, precision = cfg.split(":")
        embedding.BLOCK_J, embedding.NUM_WARPS = int(block), int(warps)
        if dtype == torch.float64 and precision != "ieee":
            continue

        def embed(d, rr, ct, precision=precision):
            return embedding.embed_all(d, rr, ct, precision=precision)

        variant = {**base, "variant": f"fused BLOCK_J={block} warps={warps} {precision}"}
        try:
            variant["us_fwd_bwd"] = round(time_graph(step_fn(d, rr, center_type, embed)), 1)
        except Exception as error:  # e.g. a tile too large for shared memory: report it, try the next
            variant["error"] = f"{type(error).__name__}: {str(error)[:200]}"
        print(json.dumps(variant), flush=True)


if __name__ == "__main__":
    main()
