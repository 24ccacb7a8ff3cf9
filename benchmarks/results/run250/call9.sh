#!/bin/bash
# Run 250 call 9 (one GPU): call 8 again, list prebuilt only, water and copper, two rounds a tree, .old first
# (call 8 had water with the list prebuilt the other way round from the probes).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
R=$PWD
ln -sfn $PWD/.peer .old/.peer
M="water:float32=$PWD/.mid/water/model.dp copper:float32=$PWD/.mid/copper/model.dp"
for t in .old . .old .; do
  el "bench $t"
  (cd $t && PYTHONPATH=$PWD timeout 150 python3 $R/benchmarks/infer_bench.py --data .peer/data \
    --inputs .peer/inputs --sizes 98304 --precisions float32 --systems water copper \
    --modes prebuilt_nlist --repeat-seconds 0.8 --models $M) 2>> $OUT/run250_err9.txt \
    | sed "s/^{/{\"tree\": \"$t\", /" | tee -a $OUT/run250_call9.jsonl \
    | grep -o '"case": "[^"]*"\|"mode": "[^"]*"\|"ms_median": [0-9.]*' | tr '\n' ' '
  echo
done
el done
