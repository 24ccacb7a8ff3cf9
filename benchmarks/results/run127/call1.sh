#!/bin/bash
# Run 127 (one H100): every GPU test (tests/kernels and tests/gpu) on the final tree of this session (40d120d).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run127; mkdir -p $TMPDIR
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl  # ASE
timeout 560 env PYTHONPATH=$PWD:/tmp/site python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/kernels tests/gpu \
  > $OUT/run127_gpu_tests.txt 2>&1
tail -5 $OUT/run127_gpu_tests.txt
