"""Run 223: the fitting nets of inference (`fitting_gemm.value_and_input_grad`, water's float32 nets, f16x3) on one
type's rows, through the fused Triton products or through cuBLAS (`MIN_ROWS` moved either side of the count), to
place `MIN_ROWS` (8,192 since run 129, which compared the first layer alone at 2,048 rows). Replayed from a CUDA
graph, as inference runs them; median us of 200 replays, two passes.
Usage: python min_rows.py"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import make_model

from deeppot.kernels import fitting_gemm

PEER = Path(__file__).resolve().parents[3] / ".peer"
model = make_model(PEER / "inputs", "water", "float32").cuda()
nets, width = model.fitting.nets, model.fitting.dim_descrpt


def replay_us(rows: int, triton_rows: int) -> float:
    fitting_gemm.MIN_ROWS = triton_rows
    x = torch.randn(rows, width, device="cuda") * 0.1
    call = lambda: fitting_gemm.value_and_input_grad(nets, x, 1, "f16x3")  # noqa: E731
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(200):
        start.record()
        graph.replay()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)
    return sorted(times)[len(times) // 2]


for rnd in range(2):
    for rows in (2048, 3072, 4096, 6144, 8192):
        print(f"pass {rnd} rows {rows}: fused {replay_us(rows, 1):.1f} us, cuBLAS {replay_us(rows, 10**9):.1f} us",
              flush=True)
