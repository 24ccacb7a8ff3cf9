#!/bin/bash
# Run 251 call 2 (one GPU): the held weights as one tile a layer (`atom_tiles.ONE_BOX`) on the f16x3 atom tiles:
# kernel tests, then box_probe.py on trained water and copper.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el tests
PYTHONPATH=$PWD timeout 120 python3 -m pytest -q -x tests/kernels/test_descriptor.py -k "holding or f16x3" 2>&1 | tail -2
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 420 python3 benchmarks/results/run251/box_probe.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp --rounds 2 --variants base t23 t23_g2 t23_g23 \
  2>> $OUT/run251_err2.txt | tee $OUT/run251_call2.jsonl | cut -c1-400
tail -5 $OUT/run251_err2.txt
el done
