#!/bin/bash
# Run 145, second call (one H100): the GPU tests with f16x3 as the default float32 products.
set -u
export TMPDIR=/tmp/run145; mkdir -p $TMPDIR
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
env PYTHONPATH=$PWD:/tmp/site timeout 570 python3 -m pytest -q tests/kernels tests/gpu tests/compress \
  > $OUT/run145_gpu_tests.txt 2>&1
echo "rc $?"
grep -E "passed|failed|FAILED|error" $OUT/run145_gpu_tests.txt | tail -15
