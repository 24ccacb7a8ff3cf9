#!/bin/bash
# Run 251 call 3 (one GPU): the GPU tests after ONE_BOX (kernels: descriptor, embedding; tests/gpu with ASE from a
# carried wheel).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
el kernels
PYTHONPATH=$PWD timeout 200 python3 -m pytest -q tests/kernels/test_descriptor.py tests/kernels/test_embedding.py \
  2>&1 | tail -3 | tee $OUT/run251_tests3.txt
el gpu
PYTHONPATH=/tmp/site:$PWD timeout 330 python3 -m pytest -q tests/gpu 2>&1 | tail -3 | tee -a $OUT/run251_tests3.txt
el done
