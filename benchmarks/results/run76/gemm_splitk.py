"""Run 76: the fitting net's first-layer GEMMs at training sizes (one frame: 108 copper, 192 water atoms): M is the
atom count, so cuBLAS runs a handful of tiles over K = 1600. Times torch.mm against a split-K form (bmm over K
chunks, then a sum) alone, and the first layer's value + input gradient + training backward (as
`deeppot.model.analytic.fit_with_input_grad` does it) both ways, each replayed from a CUDA graph. JSON lines."""

import json
from functools import partial

import torch


def replay_us(fn, reps=200):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(20):
            fn()
    g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        g.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000 / reps / 20


def split_mm(x, w, s):
    if s == 1:
        return x @ w
    n, k = x.shape
    return torch.bmm(x.view(n, s, k // s).transpose(0, 1), w.view(s, k // s, -1)).sum(0)


def layer_chain(x, w, b, s):
    """value and input gradient of tanh(x W + b), then a backward of a loss of both (training)."""
    z = split_mm(x, w, s) + b
    a = torch.tanh(z)
    gz = (1 - a * a) * 0.5
    g_in = gz @ w.t()
    loss = a.sum() + (g_in * g_in).sum()
    return torch.autograd.grad(loss, [w, b])


for dtype in (torch.float32, torch.float64):
    for n in (108, 192):
        x = torch.randn(n, 1600, dtype=dtype, device="cuda")
        w = torch.randn(1600, 240, dtype=dtype, device="cuda", requires_grad=True)
        b = torch.randn(240, dtype=dtype, device="cuda", requires_grad=True)
        for s in (1, 2, 4, 8, 16):
            row = {"case": f"gemm:{dtype}:{n}x1600x240", "split": s,
                   "mm_us": replay_us(partial(split_mm, x, w.detach(), s)),
                   "chain_us": replay_us(partial(layer_chain, x, w, b, s))}
            print(json.dumps(row), flush=True)
        gz = torch.randn(n, 240, dtype=dtype, device="cuda")
        print(json.dumps({"case": f"gemm:{dtype}:{n}x240x1600",
                          "mm_us": replay_us(partial(torch.mm, gz, w.detach().t()))}))
        print(json.dumps({"case": f"gemm:{dtype}:1600x{n}x240",
                          "mm_us": replay_us(partial(torch.mm, x.t(), gz))}), flush=True)
