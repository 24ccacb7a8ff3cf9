#!/bin/bash
# Run 262 call 1b (one GPU, ~3.5 minutes): call 1 cut to what little device time was left after failed starts:
# the stack's kernel tests on CUDA, whole calls with and without it on water and copper (one round), then the
# inference GPU tests (graphed one-type calls now take the stack too). Carry .mid.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el kernel tests
PYTHONPATH=$PWD:$PWD/tests timeout 50 python3 -m pytest -q -x tests/kernels/test_fitting_stack.py 2>&1 | tail -2
el whole calls
PYTHONPATH=$PWD:$PWD/benchmarks timeout 60 python3 benchmarks/results/run261/stack_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp --rounds 1 --calls 10 2>> $OUT/run262_err1b.txt \
  | tee $OUT/run262_ab1b.jsonl | cut -c1-140
el gpu tests
PYTHONPATH=$PWD:$PWD/tests timeout 100 python3 -m pytest -q tests/gpu/test_infer.py 2>&1 \
  | tee $OUT/run262_gpu_tests1b.txt | tail -4
el done
