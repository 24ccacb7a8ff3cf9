#!/bin/bash
# Run 219: the GPU tests after the review's refactors (one launch helper for the selecting kernels, one device
# check, bin_runs by count, the reference's masked distances shared, the GPU tests' helpers). Carry [".whl"].
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 500 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_infer.py tests/infer \
  tests/nlist tests/kernels/test_cell_pairs.py tests/kernels/test_selection.py tests/gpu/test_md_gpu.py 2>&1 \
  | tail -4 | tee $OUT/run219_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
