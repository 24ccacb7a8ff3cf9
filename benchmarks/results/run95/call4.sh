#!/bin/bash
# Run 99 (one H100): does the compiled step still want PyTorch's embedding for one net a slot? The compiled water
# steps with the fused embedding kernels (:fused) against the rule's choice, float32 and float64, alternating.
set -u
export PYTHONUNBUFFERED=1
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
for c in water:float32:compile water:float32:compile:fused water:float64:compile water:float64:compile:fused \
         water:float32:compile water:float32:compile:fused; do
  env PYTHONPATH=$PWD:$PWD/benchmarks timeout 110 python3 $B $c >> $OUT/run99_train.jsonl 2>> $OUT/run99_err.txt
  tail -qn1 $OUT/run99_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['case'], r.get('ms_per_step'), r.get('launch_to_first_step_s'), str(r.get('final', r.get('error', '')))[:120])"
done
