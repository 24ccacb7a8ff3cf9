#!/bin/bash
# Session 21, call 5 (H100): GPU tests (with ASE), MD at 98,304 water atoms float32 with the atom-tile kernels.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PWD/benchmarks
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el tests
timeout 330 python3 -m pytest -q tests/kernels tests/compress/test_kernels.py tests/gpu 2>&1 | tail -4 | tee $OUT/run43_gpu_tests.txt
el md
timeout 100 python3 benchmarks/md_bench.py --sizes 98304 --dtype float32 --steps 100 --warmup 10 | tee $OUT/run43_md.jsonl
el end
