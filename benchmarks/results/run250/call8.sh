#!/bin/bash
# Run 250 call 8 (one GPU): infer_bench.py rows (with `case` keys) for this tree and .old = 24fc2c7 (weights loaded
# every chunk), trained float32 models, DeepPot.eval and list prebuilt, 98,304 atoms, one round each, alternating.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
R=$PWD
ln -sfn $PWD/.peer .old/.peer
M="water:float32=$PWD/.mid/water/model.dp copper:float32=$PWD/.mid/copper/model.dp alloy:float32=$PWD/.mid/alloy/model.dp"
for t in . .old; do
  el "bench $t"
  (cd $t && PYTHONPATH=$PWD timeout 150 python3 $R/benchmarks/infer_bench.py --data .peer/data \
    --inputs .peer/inputs --sizes 98304 --precisions float32 --systems water copper alloy \
    --modes eval prebuilt_nlist --repeat-seconds 0.8 --models $M) 2>> $OUT/run250_err8.txt \
    | sed "s/^{/{\"tree\": \"$t\", /" | tee -a $OUT/run250_call8.jsonl \
    | grep -o '"case": "[^"]*"\|"mode": "[^"]*"\|"ms_median": [0-9.]*' | tr '\n' ' '
  echo
done
el done
