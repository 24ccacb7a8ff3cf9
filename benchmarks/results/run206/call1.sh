#!/bin/bash
# Run 206: every GPU test on the session's final tree (after runs 204-205) (tests/gpu, the list and inference tests, the pair and
# selection kernels).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
PYTHONPATH=/tmp/site timeout 570 python3 -m pytest -q -p no:cacheprovider tests/gpu tests/infer tests/nlist \
  tests/kernels/test_cell_pairs.py tests/kernels/test_selection.py 2>&1 | tail -4 | tee $OUT/run206_gpu_tests.txt
nvidia-smi --query-gpu=name --format=csv,noheader
