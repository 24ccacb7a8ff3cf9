#!/bin/bash
# Run 255, call 4 (one GPU): the README's training table again, both tools in one call. DeePMD-kit 3.2.0 (pt
# backend, its own "average training time" over 500 steps, `.peer/peer/deepmd_train.sh` from ../shared/bench) and
# this tree's default step (train_bench, 1000 steps), the compiled float64 step (what `deeppot train` picks for
# float64 runs of 200,000 steps or more), and 10,000 float64 water steps as one whole command.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run255; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el deepmd-kit
OUT=$OUT/peer timeout 300 bash .peer/peer/deepmd_train.sh .peer/data .peer/inputs .peer/whl 500 \
  water:pt:float64 water:pt:float32 copper:pt:float32 alloy:pt:float32 > $OUT/run255_peer.txt 2>&1
grep -v "^WARNING" $OUT/run255_peer.txt
el deeppot
for c in "water:float64 water:float32 copper:float32 alloy:float32" water:float64:compile water:float64:10000; do
  PYTHONPATH=$PWD timeout 120 python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000 \
    $c 2>> $OUT/run255_err4.txt | tee -a $OUT/run255_call4.jsonl \
    | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"launch_to_first_step_s": [0-9.]*\|"wall_s": [0-9.]*\|"fused_kernels": [a-z]*' \
    | tr '\n' ' '
  echo
done
el done
