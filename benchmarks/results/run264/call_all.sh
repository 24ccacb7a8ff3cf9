#!/bin/bash
# Run 264, all in one call (one GPU, ~9 minutes; carry .mid and .peer with .peer/whl): for a session that may get
# one machine start only. First this folder's call1.sh (~3.5 min: the landed fitting_stack's tests on CUDA, whole
# calls six/stack/stack5 on water and copper, tests/gpu/test_infer.py), then issue 9's benchmark cut to 192,
# 12,288, 98,304 and ~1e6 atoms, compressed copies, DeePMD-kit 3.2.0 in the same call (the README's table).
# Every step tees under $OUT, so a call stopped at its limit still returns what ran.
set -u
T0=$(date +%s)
bash benchmarks/results/run264/call1.sh
echo "== $(( $(date +%s) - T0 )) s: benchmark"
OUT=$OUT timeout 320 bash benchmarks/infer_bench.sh --compress --paths auto --modes eval prebuilt_nlist \
  --sizes 192 12288 98304 1000000 --deadline 200 --peer-seconds 90 2>&1 | tail -40
echo "== $(( $(date +%s) - T0 )) s: done"
