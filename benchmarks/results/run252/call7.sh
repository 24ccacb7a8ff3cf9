#!/bin/bash
# Run 252 call 7 (one GPU): the atom-tile gradient kernel without loop-invariant code motion in its chunk loop
# (`atom_tiles.GRAD_HOIST`): hoist_probe.py on trained water and copper, float32 and float64 (cast), then the
# descriptor kernels' GPU tests with it off.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 240 python3 benchmarks/results/run252/hoist_probe.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp water=.mid/water/model64.dp copper=.mid/copper/model64.dp \
  --rounds 2 2>> $OUT/run252_err7.txt | tee $OUT/run252_call7.jsonl | cut -c1-330
tail -3 $OUT/run252_err7.txt
el tests
sed -i 's/^GRAD_HOIST = True/GRAD_HOIST = False/' deeppot/kernels/atom_tiles.py
PYTHONPATH=$PWD timeout 110 python3 -m pytest -q -x tests/kernels/test_descriptor.py \
  -k "atom_tiles or holds or f16x3 or prescaled or twins" 2>&1 | tail -2
el done
