#!/bin/bash
# Run 243 (one H100): the f16x3 training backward's weight-gradient sum x^T gz + dx^T gu with one accumulator for
# its four low-part products (`embedding._mm_sum`; ptxas: spills 716/784 -> 596/652 B) against .old (HEAD, two _mm).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
ln -sfn $PWD/.peer .old/.peer
el kernels
for t in . .old; do for c in water copper alloy; do
  (cd $t && PYTHONPATH=$PWD python3 benchmarks/embed_kernel_bench.py --case $c --configs 16:8:f16x3) | grep f16x3 \
    | sed "s/^{/{\"tree\": \"$t\", /" | tee -a $OUT/run243_kernels.jsonl
done; done
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
el train
for t in . .old . .old; do
  (cd $t && env PYTHONPATH=$PWD:$PWD/benchmarks timeout 60 python3 $B --steps 1000 water:float32) \
    | sed "s/^{/{\"tree\": \"$t\", /" >> $OUT/run243_train.jsonl 2>> $OUT/run243_err.txt
  tail -n1 $OUT/run243_train.jsonl | cut -c1-120
  tail -n1 $OUT/run243_train.jsonl | grep -o "'final.*\|\"final.*" | cut -c1-150
done
el done
