#!/bin/bash
# Run 246 (one GPU): the training step's fitting products at a water batch's size, cuBLAS against fitting_gemm's
# Triton kernel on small tiles (small_gemm_probe.py).
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=$PWD timeout 240 python3 benchmarks/results/run246/small_gemm_probe.py | tee $OUT/run246_small_gemm.jsonl
