#!/bin/bash
# Run 63 (one H100): the fused training kernels skip each atom's chunks of padding only (the stand-in slot comes
# first in its block and lends them its G; their gradients go to its row), against the tree before (.old = ec7074a)
# in the same call: GPU tests of the kernels and steps, then train_bench 1000 steps per case, new and old.
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 env PYTHONPATH=$PWD:$PWD/benchmarks python3 -m pytest -q -p no:cacheprovider tests/model/test_slots.py \
    tests/kernels/test_embedding.py tests/gpu/test_graph_step.py tests/gpu/test_force_path_gpu.py \
    > $OUT/run63_gpu_tests.txt 2>&1
tail -3 $OUT/run63_gpu_tests.txt
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
for c in alloy:float32:fused water:float32:fused alloy:float32:compile water:float32:compile; do
  env PYTHONPATH=$PWD:$PWD/benchmarks python3 $B $c >> $OUT/run63_train.jsonl 2>> $OUT/run63_err.txt
  env PYTHONPATH=$PWD/.old:$PWD/.old/benchmarks python3 .old/$B $c >> $OUT/run63_train_before.jsonl 2>> $OUT/run63_err.txt
  tail -qn1 $OUT/run63_train.jsonl $OUT/run63_train_before.jsonl | cut -c1-130
done
