#!/bin/bash
# Run 250 call 3 (one GPU): the f16x3 kernels' tests with W2, W3 by TMA, then tma_probe.py on the trained models.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el tests
PYTHONPATH=$PWD timeout 150 python3 -m pytest -q -x tests/kernels/test_descriptor.py -k "f16x3 or atom_tiles" 2>&1 | tail -2
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 380 python3 benchmarks/results/run250/tma_probe.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 3 \
  2>> $OUT/run250_err3.txt | tee $OUT/run250_call3.jsonl | cut -c1-400
el done
