#!/bin/bash
# Run 183: every GPU test (tests/gpu) on 9bdeedd: the graphs by type (the test fixed after run 182), the sync-free
# repeated evaluation, MD with graphs by type. Run from the repository root with carry [".whl"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
T0=$(date +%s)
timeout 540 env PYTHONPATH=$PWD:/tmp/site python3 -m pytest -q -p no:cacheprovider -rfs --tb=short tests/gpu \
  > $OUT/run183_gpu_tests.txt 2>&1
tail -12 $OUT/run183_gpu_tests.txt
echo "== $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
