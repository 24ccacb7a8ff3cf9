#!/bin/bash
# Run 216: every GPU test of inference, lists, compression and the selecting kernels on the session's final code
# (tests/gpu tests/infer tests/nlist tests/compress and the pair and selection kernels). Carry [".whl"].
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 570 python3 -m pytest -q -p no:cacheprovider tests/gpu tests/infer tests/nlist \
  tests/compress tests/kernels/test_cell_pairs.py tests/kernels/test_selection.py 2>&1 | tail -8 \
  | tee $OUT/run216_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
