#!/bin/bash
# Run 262 call 1c (one GPU, ~2 minutes): the last of the session's device time: the stack's kernel tests on CUDA
# (the landed wrapper, the stage's choice of it, graphed one-type calls included), then whole calls of water with
# and without the stack (one round). Carry .mid.
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=$PWD:$PWD/tests timeout 50 python3 -m pytest -q tests/kernels/test_fitting_stack.py 2>&1 \
  | tee $OUT/run262_stack_tests1c.txt | tail -2
PYTHONPATH=$PWD:$PWD/benchmarks timeout 50 python3 benchmarks/results/run261/stack_ab.py water=.mid/water/model.dp \
  --rounds 1 --calls 10 2>> $OUT/run262_err1c.txt | tee $OUT/run262_ab1c.jsonl | cut -c1-140
