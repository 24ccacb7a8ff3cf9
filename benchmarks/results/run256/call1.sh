#!/bin/bash
# Run 256, call 1 (one GPU): the training fitting products' long k split into parts (this tree ".", SPLIT_K fill
# 1.0; ".ve" the same with fill 0.5) and run 255's prepared T-and-D kernels, second form (".vc" = HEAD +
# run255/t_and_d_v2.patch), against HEAD 720688d (".old"). GPU tests of both; train_bench (fused, 1000 steps,
# water/copper/alloy float32, water float64), trees alternating; a profile of "." with each kernel of one step.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=$PWD
for t in .old .vc .ve; do ln -sfn $PWD/.peer $t/.peer; done
el "tests"
timeout 120 python3 -m pytest -q -x tests/kernels/test_fitting.py -k "training or layer_grads" 2>&1 | tail -2
(cd .vc && PYTHONPATH=$PWD timeout 90 python3 -m pytest -q -x tests/kernels/test_descriptor_training.py 2>&1 | tail -2)
train() {  # tree round
  el "train $1 round $2"
  (cd $1 && PYTHONPATH=$PWD timeout 100 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
    --steps 1000 water:float32:fused copper:float32:fused alloy:float32:fused water:float64:fused) \
    2>> $OUT/run256_err1.txt | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" | tee -a $OUT/run256_call1.jsonl \
    | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"rmse_f_val": [0-9.]*' | tr '\n' ' '
  echo
}
for t in .old . .vc .ve; do train $t 1; done
el "profile"
PYTHONPATH=$PWD timeout 60 python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000 \
  --profile water:float32:fused > $OUT/run256_profile1.txt 2>&1
head -16 $OUT/run256_profile1.txt | cut -c1-110
trace=$(grep -o '/tmp/bench-water[^ ]*timeline.json' $OUT/run256_profile1.txt | head -1)
python3 benchmarks/results/run256/kernels_of_step.py "$trace" 5 > $OUT/run256_kernels1.txt 2>&1
tail -1 $OUT/run256_kernels1.txt
for t in . .vc .ve .old; do
  [ $(( $(date +%s) - T0 )) -gt 470 ] && { el "stop before round 2 of $t"; break; }
  train $t 2
done
el done
