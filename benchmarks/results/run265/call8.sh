#!/bin/bash
# Run 265 call 8 (one GPU, ~1.5 minutes; carry .mid and .peer): the final tree's guard (fitting_stack.ADDMM_OUT_DTYPE on
# the GPU machine's torch), the stack's tests on CUDA, one round of cublas_ab.py on water.
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=$PWD python3 -c "import torch; from deeppot.kernels import fitting_stack as f; print('torch', torch.__version__, 'ADDMM_OUT_DTYPE', f.ADDMM_OUT_DTYPE)" | tee $OUT/run265_guard8.txt
PYTHONPATH=$PWD:$PWD/tests timeout 60 python3 -m pytest -q tests/kernels/test_fitting_stack.py 2>&1 \
  | tee $OUT/run265_stack_tests8.txt | tail -2
PYTHONPATH=$PWD:$PWD/benchmarks timeout 60 python3 benchmarks/results/run265/cublas_ab.py water=.mid/water/model.dp \
  --rounds 1 --calls 10 2>> $OUT/run265_err8.txt | tee $OUT/run265_ab8.jsonl | cut -c1-110
