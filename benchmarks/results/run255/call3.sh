#!/bin/bash
# Run 255, call 3 (one GPU): D = T^T T< and dE/dT from dE/dD in training as Triton kernels each way
# (`descriptor_matrix.trainable_descriptor`, `trainable_t_bar`) in this tree (".") against b65c49c (".old"): the
# kernels' tests, two rounds of train_bench (fused, 1000 steps, water/copper/alloy float32 and water float64),
# a profile of this tree's water float32 step, then the GPU force-path tests.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=$PWD
ln -sfn $PWD/.peer .old/.peer
el "tests"
timeout 100 python3 -m pytest -q -x tests/kernels/test_descriptor_matrix.py 2>&1 | tail -2
for round in 1 2; do
  for t in . .old; do
    el "train $t round $round"
    (cd $t && PYTHONPATH=$PWD timeout 100 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
      --steps 1000 water:float32:fused copper:float32:fused alloy:float32:fused water:float64:fused) \
      2>> $OUT/run255_err3.txt | sed "s/^{/{\"tree\": \"$t\", \"round\": $round, /" | tee -a $OUT/run255_call3.jsonl \
      | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"rmse_f_val": [0-9.]*' | tr '\n' ' '
    echo
  done
done
el "profile"
PYTHONPATH=$PWD timeout 60 python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000 \
  --profile water:float32:fused > $OUT/run255_profile3.txt 2>&1
head -25 $OUT/run255_profile3.txt | cut -c1-110
[ $(( $(date +%s) - T0 )) -gt 440 ] && { el "skip gpu tests"; exit 0; }
el "gpu tests"
timeout 120 python3 -m pytest -q tests/gpu/test_force_path_gpu.py 2>&1 | tail -3
el done
