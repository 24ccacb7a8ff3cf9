#!/bin/bash
# Run 235: the atom tiles in the centres' order (order_probe.py, on the tree with order.patch applied); GPU tests of
# the kernels and inference. Carry [".peer"].
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
PYTHONPATH=$PWD:$PWD/benchmarks timeout 300 python3 benchmarks/results/run235/order_probe.py 2>&1 | grep -v Warn \
  | tee $OUT/run235_order_probe.txt
echo "== probe $(( $(date +%s) - T0 )) s"
timeout 250 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_descriptor.py tests/gpu/test_infer.py \
  2>&1 | tail -2 | tee $OUT/run235_gpu_tests.txt
echo "== $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
