#!/bin/bash
# Run 254 call 1, one GPU: the training fitting backward's products as tf32x3 Triton kernels on the training small
# tile (`fitting_gemm.BackwardProducts`). Trees: "." = x W, x W^T (run 253's prepared bwd_products.patch), and
# a layer's dL/dW (both shares), dL/db and dL/didt in one `_weight_grad_kernel`; ".vb" = the same without the sums
# (dL/db, dL/didt by PyTorch's reduction); ".va" = the patch alone (dL/dW by cuBLAS, two launches a layer);
# ".old" = 5ab1f69 (all by cuBLAS); ".vc" = "." with the training embedding backward on 16 x 4 (4 warps: two
# programs a multiprocessor; ptxas spills 696 B against 36 on 16 x 8); ".vd" = "." with the input pass's dgz = dg W
# and its elementwise dg' in one launch (`fitting_gemm.grad_bar`, epilogue GRAD_BAR); ".ve" = "." with the
# training embedding kernels' programs launched block by block, the largest block first (`_program_slots`). GPU tests of the fitting
# kernels, then train_bench.py (fused, 1000 steps) water float32 and copper float32, trees alternating, a profile
# of ".", and a second round of the first five trees (as far as the time allows).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=$PWD
el tests
PYTHONPATH=$PWD timeout 100 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_fitting.py 2>&1 | tail -2
(cd .vd && PYTHONPATH=$PWD timeout 60 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_fitting.py -k "jet" 2>&1 | tail -1)
(cd .ve && PYTHONPATH=$PWD timeout 60 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_embedding.py 2>&1 | tail -1)
for t in .old .va .vb .vc .vd .ve; do ln -sfn $PWD/.peer $t/.peer; done
train_round() {
  for t in $2; do
    [ $(( $(date +%s) - T0 )) -gt 330 ] && { el "skip $t round $1: time"; continue; }
    el "train $t round $1"
    (cd $t && PYTHONPATH=$PWD timeout 80 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
      --steps 1000 water:float32:fused copper:float32:fused) 2>> $OUT/run254_err1.txt \
      | sed "s/^{/{\"tree\": \"$t\", \"round\": $1, /" | tee -a $OUT/run254_call1.jsonl \
      | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"rmse_f_val": [0-9.]*' | tr '\n' ' '
    echo
  done
}
train_round 1 ". .old .ve .vd .vc .vb .va"
el profile
PYTHONPATH=$PWD timeout 40 python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --profile \
  water:float32:fused > $OUT/run254_train_profile1.txt 2>> $OUT/run254_err1.txt
head -34 $OUT/run254_train_profile1.txt
train_round 2 ". .old .ve .vd .vc"
el done
