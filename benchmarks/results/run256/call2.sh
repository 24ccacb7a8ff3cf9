#!/bin/bash
# Run 256, call 2 (one GPU; run again after the first try's weight-gradient kernel failed to compile: a name
# bound twice with two shapes, which the interpreter takes): the training fitting products split into parts, settings measured. "." = call 1's "."
# plus each layer's weight gradients split over rows (`SPLIT_K["min_steps_rows"]` 2); ".vd" the same without the
# rows' split (call 1's "."); ".va", ".vb": "." with SPLIT_K fill 2.0, 3.0 (programs a multiprocessor); ".vf": "."
# with run255/t_and_d_v2.patch (T and D in one kernel each way). GPU tests of "."; train_bench (fused, 1000 steps,
# water/copper/alloy float32, water float64), trees alternating, two rounds.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=$PWD
for t in .va .vb .vd .vf; do ln -sfn $PWD/.peer $t/.peer; done
el "tests"
timeout 120 python3 -m pytest -q -x tests/kernels/test_fitting.py -k "training or layer_grads" 2>&1 | tail -2
train() {  # tree round
  el "train $1 round $2"
  (cd $1 && PYTHONPATH=$PWD timeout 100 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
    --steps 1000 water:float32:fused copper:float32:fused alloy:float32:fused water:float64:fused) \
    2>> $OUT/run256_err2.txt | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" | tee -a $OUT/run256_call2.jsonl \
    | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"rmse_f_val": [0-9.]*' | tr '\n' ' '
  echo
}
for t in . .va .vb .vf .vd; do train $t 1; done
for t in .vf .va .; do
  [ $(( $(date +%s) - T0 )) -gt 540 ] && { el "stop before round 2 of $t"; break; }
  train $t 2
done
el done
