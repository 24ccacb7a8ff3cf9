#!/bin/bash
# Run 255, call 1 (one GPU): run 254's prepared comparison, the training embedding backward on 16 x 4 (".vc" = this
# tree with run254/bwd_16x4.patch) against 16 x 8 ("."), both on the largest-block-first order, two rounds of
# train_bench (fused, 1000 steps, water and copper float32); then the odd shape and water batch 4, the fused
# kernels against PyTorch's embedding and the default (timed) choice; then the 16 x 4 tree's embedding kernel tests.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=$PWD
ln -sfn $PWD/.peer .vc/.peer
bench() {  # tree, round, cases...
  local t=$1 r=$2; shift 2
  (cd $t && PYTHONPATH=$PWD timeout 90 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
    --steps 1000 "$@") 2>> $OUT/run255_err1.txt \
    | sed "s/^{/{\"tree\": \"$t\", \"round\": $r, /" | tee -a $OUT/run255_call1.jsonl \
    | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"rmse_f_val": [0-9.]*\|"fused": [a-z]*' | tr '\n' ' '
  echo
}
for round in 1 2; do
  for t in .vc .; do el "train $t round $round"; bench $t $round water:float32:fused copper:float32:fused; done
done
el "odd shape and batch 4"
bench . 1 water:float32:odd:fused water:float32:odd:plain water:float32:odd
bench . 1 water:float32:bs4:fused water:float32:bs4:plain
[ $(( $(date +%s) - T0 )) -gt 420 ] && { el "skip tests"; exit 0; }
el "tests .vc"
(cd .vc && timeout 150 python3 -m pytest -q -x tests/kernels/test_embedding.py 2>&1 | tail -3)
el done
