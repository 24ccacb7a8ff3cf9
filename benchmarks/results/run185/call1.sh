#!/bin/bash
# Run 185: FlatAdam bumps its parameters' versions (and the trainer after a replayed step), so the inference
# kernels' weight parts follow training in one process: the training graph tests, FlatAdam and the parts tests on
# the GPU. Run from the repository root, no carry.
set -u
T0=$(date +%s)
timeout 400 python3 -m pytest -q -p no:cacheprovider -rfs --tb=short tests/gpu/test_graph_step.py \
  tests/kernels/test_adam.py tests/kernels/test_precision.py > $OUT/run185_gpu_tests.txt 2>&1
tail -4 $OUT/run185_gpu_tests.txt
echo "== $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
