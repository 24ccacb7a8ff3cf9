#!/bin/bash
# Run 245, call 2 (one GPU): the GPU tests that call 1's 420 s did not reach (tests/gpu, tests/compress).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
el tests
PYTHONPATH=/tmp/site:$PWD timeout 520 python3 -m pytest -q -rs --durations=10 tests/gpu tests/compress \
  > $OUT/run245_gpu_tests_2.txt 2>&1
tail -40 $OUT/run245_gpu_tests_2.txt
el done
