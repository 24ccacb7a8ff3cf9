#!/bin/bash
# Run 257 call 5 (one GPU): dE/dT made by the atom-tile gradient kernel from dE/dD and T (`descriptor.T_BAR_IN_GRAD`,
# `atom_tiles._tile_t_bar_from_dd`): its tests, then stage_probe.py (all of calls 1-3 / with it) on trained water,
# copper, the alloy and water cast to float64.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -c "
from deeppot.io.model_file import load_model, cast_model, save_model
save_model(cast_model(load_model('.mid/water/model.dp'), 'float64'), '.mid/water/model64.dp')"
el tests
PYTHONPATH=$PWD timeout 100 python3 -m pytest -q -x tests/kernels/test_descriptor.py \
  -k "makes_t_bar or fused_stage or evaluator" 2>&1 | tail -2
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 170 python3 benchmarks/results/run257/stage_probe.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp water=.mid/water/model64.dp \
  --rounds 2 --variants all t_bar 2>> $OUT/run257_err5.txt | tee $OUT/run257_probe5.jsonl | cut -c1-200
tail -3 $OUT/run257_err5.txt
el done
