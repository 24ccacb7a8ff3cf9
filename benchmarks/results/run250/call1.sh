#!/bin/bash
# Run 250 call 1 (one GPU): the f16x3 atom-tile kernels' GPU tests with TRANSPOSE on (and HALVES forced on in a
# second pass), then variant_probe.py on the three trained float32 models, 98,304 atoms, three rounds.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el tests
PYTHONPATH=$PWD timeout 150 python3 -m pytest -q -x tests/kernels/test_descriptor.py -k "f16x3 or atom_tiles" 2>&1 | tail -2
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 380 python3 benchmarks/results/run250/variant_probe.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 3 \
  2>> $OUT/run250_err1.txt | tee $OUT/run250_call1.jsonl | cut -c1-400
el done
