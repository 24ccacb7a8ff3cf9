#!/bin/bash
# Run 251 call 4 (one GPU): infer_bench rows of this tree (ONE_BOX) and .old (553a088), list prebuilt, trained
# float32 models of the three systems, two rounds a tree, alternating, .old first.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
R=$PWD
ln -sfn $PWD/.peer .old/.peer
M="water:float32=$PWD/.mid/water/model.dp copper:float32=$PWD/.mid/copper/model.dp alloy:float32=$PWD/.mid/alloy/model.dp"
for t in .old . .old .; do
  el "bench $t"
  (cd $t && PYTHONPATH=$PWD timeout 130 python3 $R/benchmarks/infer_bench.py --data .peer/data \
    --inputs .peer/inputs --sizes 98304 --precisions float32 --systems water copper alloy \
    --modes prebuilt_nlist --repeat-seconds 0.8 --models $M) 2>> $OUT/run251_err4.txt \
    | sed "s/^{/{\"tree\": \"$t\", /" | tee -a $OUT/run251_call4.jsonl \
    | grep -o '"case": "[^"]*"\|"ms_median": [0-9.]*' | tr '\n' ' '
  echo
done
el done
