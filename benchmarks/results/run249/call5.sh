#!/bin/bash
# Run 249 call 5 (one GPU): this tree against .old (f798e1b) where the chunks changed most: float64 (fresh models;
# the old estimate cut 108,000 copper atoms into 52,428 + 52,428 + 3,144 and the alloy into 45,964 + 45,964 + 16,072)
# and the compressed float32 models (the trained ones, compressed by infer_bench), prebuilt lists, two rounds.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
R=$PWD
ln -sfn $PWD/.peer .old/.peer
M="water:float32=$PWD/.mid/water/model.dp copper:float32=$PWD/.mid/copper/model.dp alloy:float32=$PWD/.mid/alloy/model.dp"
for round in 1 2; do
  for t in . .old; do
    el "bench $t round $round"
    (cd $t && PYTHONPATH=$PWD timeout 150 python3 $R/benchmarks/infer_bench.py --data .peer/data \
      --inputs .peer/inputs --sizes 98304 --precisions float32 float64 --systems water copper alloy \
      --modes prebuilt_nlist --repeat-seconds 0.8 --compress --models $M) 2>> $OUT/run249_err5.txt \
      | sed "s/^{/{\"tree\": \"$t\", /" | tee -a $OUT/run249_call5.jsonl \
      | grep -o '"case": "[^"]*"\|"ms_median": [0-9.]*\|"peak_mem_MiB": [0-9.]*' | tr '\n' ' '
    echo
  done
done
el done
