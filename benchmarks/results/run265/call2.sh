#!/bin/bash
# Run 265 call 2 (one GPU, ~2 minutes; carry .mid): paths_probe.py on the trained water model at 98,304 atoms (eager,
# graphed, DeepPot.eval with and without its graph, kernel by kernel), then the stack's tests on CUDA at 5 stages.
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=$PWD:$PWD/benchmarks timeout 150 python3 benchmarks/results/run265/paths_probe.py .mid/water/model.dp \
  2>> $OUT/run265_err2.txt | tee $OUT/run265_paths2.jsonl | cut -c1-300
PYTHONPATH=$PWD:$PWD/tests timeout 60 python3 -m pytest -q tests/kernels/test_fitting_stack.py 2>&1 \
  | tee $OUT/run265_stack_tests2.txt | tail -3
tail -3 $OUT/run265_err2.txt
