#!/bin/bash
# Run 249 call 2 (one GPU): call 1's profile again (its probe failed to import infer_bench), and the kernel tests
# that call 1's 340 s limit cut (tests/kernels/test_selection.py).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el profile
PYTHONPATH=$PWD timeout 240 python3 benchmarks/results/run249/profile_probe.py water=.mid/water/model.dp \
  copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp > $OUT/run249_profile.txt 2>&1
grep "^##" $OUT/run249_profile.txt
el kernel tests
PYTHONPATH=$PWD timeout 200 python3 -m pytest -q tests/kernels/test_selection.py > $OUT/run249_selection_tests.txt 2>&1
tail -3 $OUT/run249_selection_tests.txt
el done
