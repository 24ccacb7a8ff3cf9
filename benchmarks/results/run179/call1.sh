#!/bin/bash
# Run 179: every GPU test on the session's final tree (tests/gpu tests/kernels tests/compress).
# Run from the repository root with carry [".whl"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
timeout 560 env PYTHONPATH=$PWD:/tmp/site python3 -m pytest -q -p no:cacheprovider -rfs --tb=short --durations=5 \
  tests/gpu tests/kernels tests/compress > $OUT/run179_gpu_tests.txt 2>&1
tail -15 $OUT/run179_gpu_tests.txt
