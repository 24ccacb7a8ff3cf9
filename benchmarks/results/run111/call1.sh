#!/bin/bash
# Run 111 (one H100): where the default (uncompiled) steps go now: profiles of water float32 and copper float32, and
# water float64 timed once more with the final tree (loss kernel trip counts in powers of two).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run111; mkdir -p $TMPDIR
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
export PYTHONPATH=$PWD:$PWD/benchmarks
for c in water:float32 copper:float32; do
  timeout 120 python3 $B --steps 30 --profile $c > $OUT/run111_profile_${c/:/_}.txt 2>&1
  head -24 $OUT/run111_profile_${c/:/_}.txt
done
timeout 120 python3 $B --steps 1000 water:float64 > $OUT/run111_train.jsonl 2>> $OUT/run111_err.txt
python3 -c "
import json; r=json.loads(open('$OUT/run111_train.jsonl').read().splitlines()[-1]); print(r['case'], r['ms_per_step'], r['final'])"
