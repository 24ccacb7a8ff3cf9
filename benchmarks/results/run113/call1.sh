#!/bin/bash
# Run 113 (one H100): the pair-gradient kernels' tiles (ptxas on a CPU: 16 x 4 spilled 1.2 / 8.5 kB in float64,
# 0.2 / 0.3 kB in float32); benchmarks/pair_grad_bench.py times tiles against the reference; then training steps
# with the new default tile (8 x 8), float64 through the kernels too (f64_pair_kernels.py), against c74fc62 (.old).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run113; mkdir -p $TMPDIR
export PYTHONPATH=$PWD:$PWD/benchmarks
timeout 200 python3 benchmarks/pair_grad_bench.py --tiles 16x4 8x4 8x8 4x4 4x8 16x8 > $OUT/run113_pair_grad.jsonl 2>> $OUT/run113_err.txt
cat $OUT/run113_pair_grad.jsonl
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_pair_grad.py 2>&1 | tail -1
B="--data .peer/data --inputs .peer/inputs --steps 1000"
for i in 1 2; do
  timeout 100 python3 benchmarks/results/run113/f64_pair_kernels.py --case water:float64 $B 2>>$OUT/run113_err.txt \
    | grep RESULT | sed 's/^RESULT {/{"tree": "f64 kernels", /' >> $OUT/run113_train.jsonl
  for tree in . .old; do
    env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks timeout 100 python3 $tree/benchmarks/train_bench.py $B water:float64 water:float32 copper:float32 \
      2>>$OUT/run113_err.txt | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run113_train.jsonl
  done
done
python3 -c "
import json
for l in open('$OUT/run113_train.jsonl'):
    r = json.loads(l); print(r['tree'], r.get('case'), r.get('ms_per_step'), str(r.get('final', r.get('error', '')))[:100])"
