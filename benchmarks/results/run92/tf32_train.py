"""Run 93: train_bench's child with TF32 cuBLAS GEMMs (torch.backends.cuda.matmul.allow_tf32) for the whole step:
what a compiled float32 step would take with TF32 tensor cores, and its lcurve."""
import runpy
import sys

import torch

torch.backends.cuda.matmul.allow_tf32 = True
sys.argv = ["benchmarks/train_bench.py", *sys.argv[1:]]
runpy.run_path("benchmarks/train_bench.py", run_name="__main__")
