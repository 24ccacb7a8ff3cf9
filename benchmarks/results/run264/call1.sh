#!/bin/bash
# Run 264 call 1 (one GPU, ~3.5 minutes; carry .mid and .peer): run 262's call 1 cut to the device time left:
# the landed fitting_stack's tests on CUDA, whole calls six/stack/stack5 on water and copper (run261/stack_ab.py),
# then tests/gpu/test_infer.py. Outputs run264_*.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el kernel tests
PYTHONPATH=$PWD:$PWD/tests timeout 60 python3 -m pytest -q tests/kernels/test_fitting_stack.py 2>&1 \
  | tee $OUT/run264_stack_tests1.txt | tail -3
el whole calls
PYTHONPATH=$PWD:$PWD/benchmarks timeout 80 python3 benchmarks/results/run261/stack_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp \
  --rounds 2 --calls 10 2>> $OUT/run264_err1.txt | tee $OUT/run264_ab1.jsonl | cut -c1-120
el gpu tests
PYTHONPATH=$PWD:$PWD/tests timeout 90 python3 -m pytest -q -x tests/gpu/test_infer.py 2>&1 \
  | tee $OUT/run264_gpu_tests1.txt | tail -4
el done
