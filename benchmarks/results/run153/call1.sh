#!/bin/bash
# Run 153 (one H100): the atom-tile kernels' tiles again with the branch-free tanh (tiles.py), float64 and float32
# (f16x3), each list twice (the current tile first and last).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run153; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
P="env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/results/run153/tiles.py"
el float64
timeout 200 $P float64:t:2,16,8 float64:t:1,16,4 float64:t:1,32,8 float64:t:2,8,4 float64:t:2,16,8 \
  float64:grad:1,16,4s float64:grad:1,16,4u float64:grad:2,8,4s float64:grad:2,16,8s float64:grad:1,32,8s \
  float64:grad:2,8,4u float64:grad:1,16,4s >> $OUT/run153_tiles.jsonl 2>> $OUT/run153_err.txt
el float32
timeout 150 $P float32:t:4,16,4 float32:t:2,16,4 float32:t:4,8,4 float32:t:8,8,4 float32:t:4,16,4 \
  float32:grad:4,16,4u float32:grad:2,16,4u float32:grad:4,8,4u float32:grad:8,8,4u float32:grad:2,32,4u \
  float32:grad:4,16,4u >> $OUT/run153_tiles.jsonl 2>> $OUT/run153_err.txt
cat $OUT/run153_tiles.jsonl
tail -3 $OUT/run153_err.txt
el done
