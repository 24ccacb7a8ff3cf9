#!/bin/bash
# Run 141 (one H100): every GPU test on this session's final tree (tests/kernels, tests/gpu, tests/compress).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run141; mkdir -p $TMPDIR
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
env PYTHONPATH=$PWD:/tmp/site timeout 560 python3 -m pytest -q tests/kernels tests/gpu tests/compress \
  > $OUT/run141_gpu_tests.txt 2>&1
echo "rc $?"
grep -E "passed|failed|error" $OUT/run141_gpu_tests.txt | tail -5
