#!/bin/bash
# Prepared for the next session, not run (this session's device time was spent), one GPU. Make ".vc" = this tree
# with run254/bwd_16x4.patch applied (the training embedding backward on 16 x 4 with the largest-block-first order;
# run 254 measured 16 x 4 only on the old order: water -2.4%, copper +1.3%). Then:
# (1) train_bench.py, fused, 1000 steps, water and copper float32, ".vc" against ".", two rounds;
# (2) the compile rule (`force_path.COMPILE_MIN_STEPS`: GPU runs of 100,000 steps or more compile): the default
#     step against the compiled one in the same call, water float32/float64, copper and the alloy float32, one
#     round of each compiled case (each compiles for 30-60 s), the default cases twice.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=$PWD
ln -sfn $PWD/.peer .vc/.peer
for round in 1 2; do
  for t in .vc .; do
    el "train $t round $round"
    (cd $t && PYTHONPATH=$PWD timeout 60 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
      --steps 1000 water:float32:fused copper:float32:fused) 2>> $OUT/run255_err1.txt \
      | sed "s/^{/{\"tree\": \"$t\", \"round\": $round, /" | tee -a $OUT/run255_call1.jsonl \
      | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"rmse_f_val": [0-9.]*' | tr '\n' ' '
    echo
  done
done
for cases in "water:float32:compile water:float32" "copper:float32:compile copper:float32" \
             "water:float64:compile water:float64" "alloy:float32:compile alloy:float32"; do
  el "compile rule: $cases"
  PYTHONPATH=$PWD timeout 150 python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000 \
    $cases 2>> $OUT/run255_err1.txt | tee -a $OUT/run255_compile.jsonl \
    | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"launch_to_first_step_s": [0-9.]*' | tr '\n' ' '
  echo
done
el done
