#!/bin/bash
# Run 250 call 6 (one GPU): copper_check.py (is copper's 1.2% force deviation between tiles a fault or float32
# cancellation?), then the GPU tests with the weights held (HOLD_WEIGHTS): tests/kernels/test_descriptor.py, tests/gpu.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el copper
PYTHONPATH=$PWD:$PWD/benchmarks timeout 90 python3 benchmarks/results/run250/copper_check.py copper=.mid/copper/model.dp \
  2>> $OUT/run250_err6.txt | tee $OUT/run250_copper.jsonl
el tests
PYTHONPATH=$PWD timeout 150 python3 -m pytest -q tests/kernels/test_descriptor.py 2>&1 | tail -2 | tee $OUT/run250_tests6.txt
el gpu
PYTHONPATH=$PWD timeout 250 python3 -m pytest -q tests/gpu 2>&1 | tail -3 | tee -a $OUT/run250_tests6.txt
el done
