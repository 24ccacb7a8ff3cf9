#!/bin/bash
# Run 250 call 5 (one GPU): tile_probe.py, f16x3 atom tiles with the weights held (HOLD_WEIGHTS), two rounds.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 500 python3 benchmarks/results/run250/tile_probe.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 2 \
  2>> $OUT/run250_err5.txt | tee $OUT/run250_call5.jsonl | cut -c1-400
el done
