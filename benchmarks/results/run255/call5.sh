#!/bin/bash
# Run 255, call 5 (one GPU): T = R^T G / N and D = T^T T< in one Triton kernel each way
# (`descriptor_training.trainable_t_and_descriptor`) in this tree (".") against call 3's tree (".old", D alone as a
# kernel, T from PyTorch's batched GEMM): the kernels' tests, two rounds of train_bench (fused, 1000 steps, water,
# copper, alloy float32, water float64), a profile of this tree's water float32 step.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=$PWD
ln -sfn $PWD/.peer .old/.peer
el "tests"
timeout 90 python3 -m pytest -q -x tests/kernels/test_descriptor_training.py tests/kernels/test_descriptor_matrix.py 2>&1 | tail -2
for round in 1 2; do
  for t in . .old; do
    [ $(( $(date +%s) - T0 )) -gt 250 ] && { el "skip $t $round"; continue; }
    el "train $t round $round"
    (cd $t && PYTHONPATH=$PWD timeout 80 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
      --steps 1000 water:float32:fused copper:float32:fused alloy:float32:fused water:float64:fused) \
      2>> $OUT/run255_err5.txt | sed "s/^{/{\"tree\": \"$t\", \"round\": $round, /" | tee -a $OUT/run255_call5.jsonl \
      | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"rmse_f_val": [0-9.]*' | tr '\n' ' '
    echo
  done
done
[ $(( $(date +%s) - T0 )) -gt 290 ] && { el "skip profile"; exit 0; }
el "profile"
PYTHONPATH=$PWD timeout 40 python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000 \
  --profile water:float32:fused > $OUT/run255_profile5.txt 2>&1
head -12 $OUT/run255_profile5.txt | cut -c1-110
el done
