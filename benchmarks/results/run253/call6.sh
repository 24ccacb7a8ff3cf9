#!/bin/bash
# Run 253 call 6, one GPU: the pair-gradient forward one chunk a program, its backward back to one program an atom
# (call 5's four programs an atom gained nothing: 0.021 -> 0.022 ms plus a 4 us sum). This tree against c97f44e
# (.s1): GPU tests of pair_grad; train_bench.py (fused, 1000 steps) water and copper float32, one round a tree.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=$PWD
el tests
PYTHONPATH=$PWD timeout 40 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_pair_grad.py 2>&1 | tail -1
ln -sfn $PWD/.peer .s1/.peer
for t in . .s1; do
  el "train $t"
  (cd $t && PYTHONPATH=$PWD timeout 50 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
    --steps 1000 water:float32:fused copper:float32:fused) 2>> $OUT/run253_err6.txt \
    | sed "s/^{/{\"tree\": \"$t\", /" | tee -a $OUT/run253_call6.jsonl \
    | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"rmse_f_val": [0-9.]*' | tr '\n' ' '
  echo
done
el done
