#!/bin/bash
# Run 264, all in one call (one GPU, ~9 minutes; carry .mid and .peer with .peer/whl): for a session that may get
# one machine start only. (1) the landed fitting_stack's tests on CUDA; (2) whole calls six/stack/stack5 on water
# and copper (run261/stack_ab.py); (3) issue 9's benchmark cut to 192, 12,288, 98,304 and ~1e6 atoms, compressed
# copies, DeePMD-kit 3.2.0 in the same call (the README's table); (4) tests/gpu/test_infer.py while time is left.
# Every step tees under $OUT, so a call stopped at its limit still returns what ran.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el kernel tests
PYTHONPATH=$PWD:$PWD/tests timeout 60 python3 -m pytest -q tests/kernels/test_fitting_stack.py 2>&1 \
  | tee $OUT/run264_stack_tests.txt | tail -3
el whole calls
PYTHONPATH=$PWD:$PWD/benchmarks timeout 80 python3 benchmarks/results/run261/stack_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp \
  --rounds 2 --calls 10 2>> $OUT/run264_err.txt | tee $OUT/run264_ab.jsonl | cut -c1-120
el benchmark
OUT=$OUT timeout 330 bash benchmarks/infer_bench.sh --compress --paths auto --modes eval prebuilt_nlist \
  --sizes 192 12288 98304 1000000 --deadline 200 --peer-seconds 90 2>&1 | tail -40
el gpu tests
PYTHONPATH=$PWD:$PWD/tests timeout 60 python3 -m pytest -q -x tests/gpu/test_infer.py 2>&1 \
  | tee $OUT/run264_gpu_tests.txt | tail -3
el done
