#!/bin/bash
# Run 169: descriptor-matrix kernel variants (t_bar_variants.py). Run from the repository root.
set -u
export PYTHONUNBUFFERED=1
timeout 300 env PYTHONPATH=$PWD python3 benchmarks/results/run169/t_bar_variants.py > $OUT/run169_variants.jsonl \
  2> $OUT/run169_err.txt
cat $OUT/run169_variants.jsonl
tail -3 $OUT/run169_err.txt
