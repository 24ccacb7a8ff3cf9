#!/bin/bash
# Run 254 call 3, the same H200 (warm): ".vf" (call 2's) against ".old" (5ab1f69) on water float64 and the alloy
# float32 (train_bench.py, fused, 1000 steps, one round), then the embedding kernels' GPU tests on ".vf".
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=$PWD
ln -sfn $PWD/.peer .vf/.peer; ln -sfn $PWD/.peer .old/.peer
for t in .vf .old; do
  el "train $t"
  (cd $t && PYTHONPATH=$PWD timeout 60 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
    --steps 1000 water:float64:fused alloy:float32:fused) 2>> $OUT/run254_err3.txt \
    | sed "s/^{/{\"tree\": \"$t\", /" | tee -a $OUT/run254_call3.jsonl \
    | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"rmse_f_val": [0-9.]*' | tr '\n' ' '
  echo
done
el tests
(cd .vf && PYTHONPATH=$PWD timeout 70 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_embedding.py 2>&1 | tail -1)
el done
