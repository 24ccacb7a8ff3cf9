#!/bin/bash
# Run 265 call 6 (one GPU, ~3 minutes; carry .mid and .peer): dE/dD on cuBLAS from gz1's float16 parts: the stack's
# tests on CUDA, whole calls with and without it (cublas_ab.py: water, copper, the alloy), tests/gpu/test_infer.py.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=$PWD:$PWD/tests timeout 60 python3 -m pytest -q tests/kernels/test_fitting_stack.py 2>&1 \
  | tee $OUT/run265_stack_tests6.txt | tail -3
el whole calls
PYTHONPATH=$PWD:$PWD/benchmarks timeout 100 python3 benchmarks/results/run265/cublas_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 2 --calls 10 \
  2>> $OUT/run265_err6.txt | tee $OUT/run265_ab6.jsonl | cut -c1-150
el gpu tests
PYTHONPATH=$PWD:$PWD/tests timeout 90 python3 -m pytest -q -x tests/gpu/test_infer.py 2>&1 \
  | tee $OUT/run265_gpu_tests6.txt | tail -3
el done
