#!/bin/bash
# Run 217: the GPU tests of inference after the last change (a kept whole-call graph serves a box grown a little).
# Carry [".whl"].
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 400 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_infer.py tests/infer \
  tests/gpu/test_calculator_gpu.py tests/gpu/test_tools_gpu.py tests/gpu/test_ensemble_gpu.py 2>&1 | tail -4 \
  | tee $OUT/run217_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
