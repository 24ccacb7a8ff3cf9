#!/bin/bash
# Run 124 (one H100): accuracy after 3000 steps (alloy 2000, the peer table's lengths) of this tree's default and
# compiled steps, the final model tested on every validation frame (train_bench.py --test).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run124; mkdir -p $TMPDIR
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --test"
for c in water:float32:3000 water:float32:3000:compile water:float64:3000 copper:float32:3000 alloy:float32:2000; do
  env PYTHONPATH=$PWD:$PWD/benchmarks timeout 110 python3 $B $c >> $OUT/run124_train.jsonl 2>> $OUT/run124_err.txt
  tail -qn1 $OUT/run124_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['case'], r.get('ms_per_step'), r.get('dp_test_validation'), r.get('error', '')[:200])"
done
