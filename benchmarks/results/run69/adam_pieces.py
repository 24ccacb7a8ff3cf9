"""Run 74: FusedAdam.step (torch's fused multi-tensor update) on the parameter shapes of the copper (float32, one
fitting net) and water (float64, two fitting nets) models, with each parameter updated as views of PIECE elements;
replayed from a CUDA graph, microseconds per step."""
import json
import sys

import torch

from deeppot.train import adam

EMBED = [(1, 25), (25,), (25, 50), (50,), (50, 100), (100,)]
FIT = [(1600, 240), (240,), (240, 240), (240,), (240, 240), (240,), (240, 1), (1,)]
MODELS = {"copper:float32": (torch.float32, EMBED + FIT), "water:float64": (torch.float64, 2 * EMBED + 2 * FIT)}


def time_step(dtype, shapes, piece: int) -> float:
    adam.PIECE = piece
    params = [torch.nn.Parameter(torch.randn(s, dtype=dtype, device="cuda")) for s in shapes]
    for p in params:
        p.grad = torch.randn_like(p)
    opt = adam.FusedAdam(params, lr=torch.tensor(1e-3, device="cuda"))
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):
            opt.step()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        opt.step()
    for _ in range(20):
        graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(500):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 500 * 1e3


for name, (dtype, shapes) in MODELS.items():
    for piece in (10**9, 65536, 32768, 16384, 8192, 4096, 2048):
        row = {"case": name, "piece": piece, "us_per_step": round(time_step(dtype, shapes, piece), 2),
               "params": sum(torch.Size(s).numel() for s in shapes)}
        print(json.dumps(row), file=sys.stdout, flush=True)
