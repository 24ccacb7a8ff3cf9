#!/bin/bash
# Run 251 call 5 (one GPU): biases as rows of the held weights (`atom_tiles.BIAS_ROWS`): kernel tests, then
# bias_probe.py on the three trained models.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el tests
PYTHONPATH=$PWD timeout 150 python3 -m pytest -q -x tests/kernels/test_descriptor.py -k "holding or f16x3 or atom_tiles" 2>&1 | tail -2
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 330 python3 benchmarks/results/run251/bias_probe.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 2 \
  2>> $OUT/run251_err5.txt | tee $OUT/run251_call5.jsonl | cut -c1-300
tail -3 $OUT/run251_err5.txt
el done
