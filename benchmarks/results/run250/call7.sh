#!/bin/bash
# Run 250 call 7 (one GPU): tests/gpu with ASE on the path (call 6's run lacked it), the weights held (HOLD_WEIGHTS).
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
PYTHONPATH=/tmp/site:$PWD timeout 330 python3 -m pytest -q --durations=5 tests/gpu > $OUT/run250_gpu_tests7.txt 2>&1
tail -12 $OUT/run250_gpu_tests7.txt
