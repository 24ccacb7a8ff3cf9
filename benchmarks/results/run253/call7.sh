#!/bin/bash
# Run 253 call 7, prepared and not run (no device time was left; apply bwd_products.patch to this tree first,
# .old = the tree without it), one GPU: the training fitting backward's x W and x W^T (dgz = dg W, dh = dz W^T;
# 6 of the step's 23 cuBLAS float32 GEMM launches, 5-13 us each in run 253's profile) as tf32x3 `_gemm_kernel`
# launches on the training small tile; dL/dW (x^T y) stays with cuBLAS. Interpreter tests pass
# (tests/kernels/test_fitting.py -k "training or jet": 42; a product scaled by 1.001 fails 6). GPU tests, then
# train_bench.py (fused, 1000 steps) water float32 and copper float32, trees alternating, two rounds, and a profile.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=$PWD
el tests
PYTHONPATH=$PWD timeout 120 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_fitting.py 2>&1 | tail -1
ln -sfn $PWD/.peer .old/.peer
for round in 1 2; do
  for t in . .old; do
    el "train $t round $round"
    (cd $t && PYTHONPATH=$PWD timeout 60 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
      --steps 1000 water:float32:fused copper:float32:fused) 2>> $OUT/run253_err7.txt \
      | sed "s/^{/{\"tree\": \"$t\", \"round\": $round, /" | tee -a $OUT/run253_call7.jsonl \
      | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"rmse_f_val": [0-9.]*' | tr '\n' ' '
    echo
  done
done
el profile
PYTHONPATH=$PWD timeout 40 python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --profile \
  water:float32:fused > $OUT/run253_train_profile7.txt 2>> $OUT/run253_err7.txt
head -25 $OUT/run253_train_profile7.txt
el done
