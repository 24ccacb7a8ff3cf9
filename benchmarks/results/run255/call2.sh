#!/bin/bash
# Run 255, call 2 (one GPU, the same warm machine as call 1): the compile rule (`force_path.COMPILE_MIN_STEPS`):
# the default step against the compiled one in one process, water float32/float64, copper and the alloy float32.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
for cases in "water:float32:compile water:float32" "copper:float32:compile copper:float32" \
             "water:float64:compile water:float64" "alloy:float32:compile alloy:float32"; do
  [ $(( $(date +%s) - T0 )) -gt 420 ] && { el "skip $cases"; continue; }
  el "compile rule: $cases"
  PYTHONPATH=$PWD timeout 150 python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000 \
    $cases 2>> $OUT/run255_err2.txt | tee -a $OUT/run255_call2.jsonl \
    | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"launch_to_first_step_s": [0-9.]*' | tr '\n' ' '
  echo
done
el done
