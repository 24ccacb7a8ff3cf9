#!/bin/bash
# Run 253 call 5, one GPU: the training step's pair-gradient kernels (`pair_grad`) with more programs: the forward
# one chunk of slots a program, the backward 4 programs an atom with dL/dT-bar summed afterwards (this tree) against
# c97f44e (.s1, one program an atom walking its chunks). GPU tests of pair_grad; train_bench.py (fused, 1000 steps)
# water float32 / float64 and copper float32, trees alternating, two rounds; a profile of this tree's water step.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
R=$PWD
el tests
PYTHONPATH=$PWD timeout 60 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_pair_grad.py 2>&1 | tail -2
ln -sfn $PWD/.peer .s1/.peer
for round in 1 2; do
  for t in . .s1; do
    el "train $t round $round"
    (cd $t && PYTHONPATH=$PWD timeout 75 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
      --steps 1000 water:float32:fused water:float64:fused copper:float32:fused) 2>> $OUT/run253_err5.txt \
      | sed "s/^{/{\"tree\": \"$t\", \"round\": $round, /" | tee -a $OUT/run253_call5.jsonl \
      | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"rmse_f_val": [0-9.]*' | tr '\n' ' '
    echo
  done
done
el profile
PYTHONPATH=$PWD timeout 40 python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --profile \
  water:float32:fused > $OUT/run253_train_profile5.txt 2>> $OUT/run253_err5.txt
grep -E "device busy|_forward_kernel|_backward_kernel|reduce_kernel" $OUT/run253_train_profile5.txt
el done
