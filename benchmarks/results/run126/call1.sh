#!/bin/bash
# Run 126 (one H100): where the default (uncompiled) steps go after this session's kernels (f9198fc): profiles of
# water float32 and float64 (train_bench.py --profile: 5 steps after warm-up, device time by kernel).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run126; mkdir -p $TMPDIR
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
export PYTHONPATH=$PWD:$PWD/benchmarks
for c in water:float32 water:float64; do
  timeout 120 python3 $B --steps 30 --profile $c > $OUT/run126_profile_${c/:/_}.txt 2>&1
  head -40 $OUT/run126_profile_${c/:/_}.txt
done
