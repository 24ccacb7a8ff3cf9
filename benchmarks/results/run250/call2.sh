#!/bin/bash
# Run 250 call 2 (one GPU): call 1's probe again (it had recursed in its sync()), without the tests (they passed).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 380 python3 benchmarks/results/run250/variant_probe.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 3 \
  2>> $OUT/run250_err2.txt | tee $OUT/run250_call2.jsonl | cut -c1-400
el done
