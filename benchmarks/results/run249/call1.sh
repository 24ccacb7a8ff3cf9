#!/bin/bash
# Run 249 call 1 (one GPU): where trained models' inference calls go, kernel by kernel (profile_probe.py on the
# .mid models, 98,304-108,000 atoms); then tests/kernels on the GPU, not run there since the last session's
# precision.descriptor_bound / LIMIT 2^15 change.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el profile
PYTHONPATH=$PWD timeout 200 python3 benchmarks/results/run249/profile_probe.py water=.mid/water/model.dp \
  copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp > $OUT/run249_profile.txt 2>&1
grep "^##" $OUT/run249_profile.txt
el kernel tests
PYTHONPATH=$PWD timeout 340 python3 -m pytest -q -x --durations=10 tests/kernels > $OUT/run249_kernel_tests.txt 2>&1
tail -15 $OUT/run249_kernel_tests.txt
el done
