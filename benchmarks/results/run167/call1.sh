#!/bin/bash
# Run 167: a tile sweep of the float32 atom-tile kernels reading the shared rows (tiles_rows.py, two passes).
# Run from the repository root with carry [".peer"].
set -u
export PYTHONUNBUFFERED=1
for pass in 1 2; do
  timeout 250 env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/results/run167/tiles_rows.py \
    | sed "s#^{#{\"pass\": $pass, #" >> $OUT/run167_tiles.jsonl 2>> $OUT/run167_err.txt
done
cat $OUT/run167_tiles.jsonl
tail -3 $OUT/run167_err.txt
