#!/bin/bash
# Run 254 call 2, the same H200 (warm): ".vf" = call 1's "." with ".ve" (the training embedding kernels' programs
# block by block, the largest block first) and ".vd" (GRAD_BAR) together, against "." and ".old" (5ab1f69);
# train_bench.py (fused, 1000 steps) water float32 and copper float32, trees alternating, two rounds.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=$PWD
ln -sfn $PWD/.peer .vf/.peer; ln -sfn $PWD/.peer .old/.peer
for round in 1 2; do
  for t in .vf .old .; do
    [ $(( $(date +%s) - T0 )) -gt 200 ] && { el "skip $t round $round: time"; continue; }
    el "train $t round $round"
    (cd $t && PYTHONPATH=$PWD timeout 60 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
      --steps 1000 water:float32:fused copper:float32:fused) 2>> $OUT/run254_err2.txt \
      | sed "s/^{/{\"tree\": \"$t\", \"round\": $round, /" | tee -a $OUT/run254_call2.jsonl \
      | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"rmse_f_val": [0-9.]*' | tr '\n' ' '
    echo
  done
done
el done
