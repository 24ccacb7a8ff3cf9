#!/bin/bash
# Run 265 call 5 (one GPU, ~1 minute): cublas_probe.py, the fitting nets' 1600-wide f16x3 products on cuBLAS's
# float16 GEMMs with float32 output against the tree's persistent Triton kernel.
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=$PWD timeout 120 python3 benchmarks/results/run265/cublas_probe.py 2>> $OUT/run265_err5.txt \
  | tee $OUT/run265_cublas5.jsonl
tail -5 $OUT/run265_err5.txt
