"""Run 92: FusedAdam (torch's fused multi-tensor update, pieces of 8192) against FlatAdam (one Triton kernel over
flat buffers, plus the gradients' copy into them) on the parameter shapes of the copper (float32) and water
(float32, float64) models; each replayed from a CUDA graph, microseconds per update; and the largest difference
of the parameters after 20 updates with the same random gradients (0 = bit for bit)."""
import json
import sys

import torch

from deeppot.train import adam

EMBED = [(1, 25), (25,), (25, 50), (50,), (50, 100), (100,)]
FIT = [(1600, 240), (240,), (240, 240), (240,), (240, 240), (240,), (240, 1), (1,)]
MODELS = {"copper:float32": (torch.float32, EMBED + FIT), "water:float32": (torch.float32, 4 * EMBED + 2 * FIT),
          "water:float64": (torch.float64, 4 * EMBED + 2 * FIT)}


def make(cls, dtype, shapes, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(s, dtype=dtype, device="cuda", generator=g)) for s in shapes]
    for p in params:
        p.grad = torch.randn(p.shape, dtype=dtype, device="cuda", generator=g)
    return params, cls(params, lr=torch.tensor(1e-3, device="cuda"), weight_decay=0.0)


def timed(fn) -> float:
    """us a call of fn, replayed 1000 times from a CUDA graph (after three eager calls on a side stream)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    for _ in range(20):
        graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(1000):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return round(start.elapsed_time(end), 2)  # ms for 1000 calls = us a call


def time_step(cls, dtype, shapes) -> float:
    _, opt = make(cls, dtype, shapes)
    return timed(opt.step)


def difference(dtype, shapes) -> float:
    (a, oa), (b, ob) = make(adam.FlatAdam, dtype, shapes), make(adam.FusedAdam, dtype, shapes)
    g = torch.Generator(device="cuda").manual_seed(1)
    for _ in range(20):
        for p, q in zip(a, b, strict=True):
            p.grad.copy_(torch.randn(p.shape, dtype=dtype, device="cuda", generator=g))
            q.grad.copy_(p.grad)
        oa.step()
        ob.step()
    return max(float((p - q).abs().max()) for p, q in zip(a, b, strict=True))


if __name__ == "__main__":
    for name, (dtype, shapes) in MODELS.items():
        row = {"case": name, "params": sum(torch.Size(s).numel() for s in shapes),
               "fused_us": round(time_step(adam.FusedAdam, dtype, shapes), 2),
               "flat_us": round(time_step(adam.FlatAdam, dtype, shapes), 2),
               "max_param_difference_after_20": difference(dtype, shapes)}
        print(json.dumps(row), file=sys.stdout, flush=True)
