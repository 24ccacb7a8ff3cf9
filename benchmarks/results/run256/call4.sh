#!/bin/bash
# Run 256, call 4 (one GPU, the session's last ~200 s): the fitting nets of a batch of one system on their own type's
# atoms (`deeppot.model.fitting.TypeRows`, ".") against every net on every atom (".old" = the tree before it):
# train_bench (fused, 1000 steps, water and alloy float32, water float64), trees alternating; then the GPU tests of
# the fitting jet with type rows.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=$PWD
ln -sfn $PWD/.peer .old/.peer
train() {  # tree round
  el "train $1 round $2"
  (cd $1 && PYTHONPATH=$PWD timeout 70 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
    --steps 1000 water:float32:fused alloy:float32:fused water:float64:fused) \
    2>> $OUT/run256_err4.txt | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" | tee -a $OUT/run256_call4.jsonl \
    | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"rmse_f_val": [0-9.]*' | tr '\n' ' '
  echo
}
train . 1; train .old 1; train . 2; train .old 2
el "tests"
timeout 40 python3 -m pytest -q tests/kernels/test_fitting.py -k "through_the_jet or type_rows or own_types_rows" tests/model/test_net_paths.py 2>&1 \
  | tail -1
el done
