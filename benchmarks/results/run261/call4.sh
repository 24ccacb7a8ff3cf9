#!/bin/bash
# Run 261 call 4 (prepared, never ran: no machine started, then too little device time to start one; one GPU,
# ~4 minutes): main with `fitting_stack` landed: its kernel tests on CUDA, whole calls with
# and without the stack (stack_ab.py), then the inference GPU tests (what fits in the session's device time left).
# Carry .mid and .peer. TAG names the outputs (default run261; run 262's call 1 runs this with TAG=run262).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
TAG=${TAG:-run261}
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m deeppot compress -i .mid/water/model.dp -o /tmp/compressed.dp 2>&1 | tail -1
el kernel tests
PYTHONPATH=$PWD:$PWD/tests timeout 60 python3 -m pytest -q tests/kernels/test_fitting_stack.py 2>&1 | tail -2
el whole calls
PYTHONPATH=$PWD:$PWD/benchmarks timeout 120 python3 benchmarks/results/run261/stack_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp water=/tmp/compressed.dp \
  --rounds 2 --calls 10 2>> $OUT/${TAG}_err4.txt | tee $OUT/${TAG}_ab4.jsonl | cut -c1-120
el gpu tests
PYTHONPATH=$PWD:$PWD/tests timeout 130 python3 -m pytest -q tests/gpu/test_infer.py tests/gpu/test_force_path_gpu.py \
  tests/gpu/test_kernel_choice_gpu.py tests/gpu/test_tools_gpu.py 2>&1 | tee $OUT/${TAG}_gpu_tests4.txt | tail -4
el done
