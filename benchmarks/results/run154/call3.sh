#!/bin/bash
# Run 154, third call (one H100): the GPU tests call 2 did not reach in its time (tests/gpu and tests/compress).
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
timeout 500 env PYTHONPATH=$PWD:/tmp/site python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/gpu \
  tests/compress > $OUT/run154_gpu_tests3.txt 2>&1
tail -4 $OUT/run154_gpu_tests3.txt
