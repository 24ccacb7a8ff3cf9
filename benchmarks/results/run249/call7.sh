#!/bin/bash
# Run 249 call 7 (one GPU): tests/gpu on the session's last code (equal chunks, the smaller estimate, own_type_rows
# without a gather for one type, which the training step's all-nets branch takes too).
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
PYTHONPATH=/tmp/site:$PWD timeout 300 python3 -m pytest -q --durations=5 tests/gpu > $OUT/run249_gpu_tests7.txt 2>&1
tail -12 $OUT/run249_gpu_tests7.txt
