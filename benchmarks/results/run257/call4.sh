#!/bin/bash
# Run 257 call 4 (one GPU): the GPU tests on the session's final tree (ad41568): tests/gpu (MD, graphs, ensembles,
# the calculator), the compressed kernels and the kernels the session changed.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
el gpu
PYTHONPATH=/tmp/site:$PWD timeout 300 python3 -m pytest -q tests/gpu tests/compress/test_kernels.py \
  > $OUT/run257_gpu_tests4.txt 2>&1
tail -4 $OUT/run257_gpu_tests4.txt
el kernels
PYTHONPATH=$PWD timeout 150 python3 -m pytest -q tests/kernels/test_scatter.py tests/kernels/test_pairs.py \
  tests/kernels/test_descriptor_matrix.py tests/infer 2>&1 | tail -2
el done
