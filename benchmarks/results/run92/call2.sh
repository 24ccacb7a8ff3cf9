#!/bin/bash
# Run 93 (one H100): FlatAdam's parts and tiles; compiled float32 steps with TF32 cuBLAS GEMMs against float32
# (water, copper; 1000 steps: time and final lcurve line).
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
timeout 120 python3 benchmarks/results/run92/adam_parts.py > $OUT/run93_adam_parts.jsonl 2>$OUT/run93_err.txt
cut -c1-300 $OUT/run93_adam_parts.jsonl
for c in water:float32:compile copper:float32:compile; do
  for how in plain tf32; do
    script=benchmarks/train_bench.py; [ $how = tf32 ] && script=benchmarks/results/run92/tf32_train.py
    DEEPPOT_BENCH_T_LAUNCH=$(date +%s.%N) timeout 150 python3 $script --case $c --data .peer/data \
      --inputs .peer/inputs --steps 1000 2>>$OUT/run93_err.txt | grep RESULT \
      | sed "s#^RESULT {#{\"matmul\": \"$how\", #" >> $OUT/run93_train.jsonl
    tail -qn1 $OUT/run93_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['matmul'], r['case'], r.get('ms_per_step'), r.get('launch_to_first_step_s'), str(r.get('final', r.get('error', '')))[:150])"
  done
done
