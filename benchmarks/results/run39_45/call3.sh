#!/bin/bash
# Session 21, call 3 (H100): tanh with the fast (non-IEEE) division in every embedding kernel against the IEEE
# division, for the inference kernels (one atom and atom tiles) and a fused-kernel training step; GPU tests.
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el tests
timeout 200 python3 -m pytest -q -x tests/kernels tests/gpu/test_infer.py 2>&1 | tail -3
for ieee in 1 0; do
  el "tiles ieee=$ieee"
  DEEPPOT_IEEE_TANH=$ieee timeout 150 python3 benchmarks/atom_tiles_sweep.py --atoms 98304 --precision float32 \
    | sed "s/^{/{\"ieee_tanh\": $ieee, /" | tee -a $OUT/run41_atom_tiles_tanh.jsonl
  el "train ieee=$ieee"
  DEEPPOT_IEEE_TANH=$ieee timeout 100 python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
    --steps 1000 water:float32:fused water:float64:fused 2>/dev/null | sed "s/^{/{\"ieee_tanh\": $ieee, /" \
    | tee -a $OUT/run41_train_tanh.jsonl
done
el end
