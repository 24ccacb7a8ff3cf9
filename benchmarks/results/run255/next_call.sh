#!/bin/bash
# Prepared for the next session, not run (this session's device time was spent), one GPU. Make ".vc" = this tree
# with run255/t_and_d_v2.patch applied (T and D in one kernel each way, second form: the forward's chunks as one
# (R^T padded to 16 rows) @ G product each into a register accumulator, where call 5's summed across warps per
# chunk; the backward one program a chunk of slots, where call 5's walked an atom's chunks in one program). Call 5's
# first form: copper -2.5%, water +0.2%, the alloy +1.4%, water float64 +0.7%. Then:
# (1) its tests on the GPU (tl.dot of float32 at "ieee" and of float64 are new to these kernels);
# (2) train_bench, fused, 1000 steps, water/copper/alloy float32 and water float64, ".vc" against ".", two rounds.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=$PWD
ln -sfn $PWD/.peer .vc/.peer
el "tests .vc"
(cd .vc && timeout 90 python3 -m pytest -q -x tests/kernels/test_descriptor_training.py 2>&1 | tail -2)
for round in 1 2; do
  for t in .vc .; do
    el "train $t round $round"
    (cd $t && PYTHONPATH=$PWD timeout 80 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
      --steps 1000 water:float32:fused copper:float32:fused alloy:float32:fused water:float64:fused) \
      2>> $OUT/run256_err1.txt | sed "s/^{/{\"tree\": \"$t\", \"round\": $round, /" | tee -a $OUT/run256_call1.jsonl \
      | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"rmse_f_val": [0-9.]*' | tr '\n' ' '
    echo
  done
done
el done
