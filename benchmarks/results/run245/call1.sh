#!/bin/bash
# Run 245 (one GPU): half_probe.py (the gradient kernel with the same-type blocks' reach halved: what a same-type
# pair list could save at most), then every GPU test of the tree (tests/kernels tests/gpu tests/compress; ASE from a
# carried wheel): the last session ran the f16x3 training kernels' _mm_sum (945bb96) through training only.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 150 python3 benchmarks/results/run245/half_probe.py | tee $OUT/run245_half.jsonl
el tests
PYTHONPATH=/tmp/site:$PWD timeout 420 python3 -m pytest -q --durations=15 tests/kernels tests/gpu tests/compress \
  > $OUT/run245_gpu_tests.txt 2>&1
tail -30 $OUT/run245_gpu_tests.txt
el done
