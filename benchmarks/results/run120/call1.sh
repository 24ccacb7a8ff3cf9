#!/bin/bash
# Run 120 (one H100): the training embedding backward's weight-gradient GEMMs in float32 FMA ("ieee") instead of
# 3xTF32 (run119/bwd_variants.py, variants weight-grads-*), water, copper and alloy shapes.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run120; mkdir -p $TMPDIR
timeout 300 env PYTHONPATH=$PWD python3 benchmarks/results/run119/bwd_variants.py --precision float32 \
  --cases water copper alloy --variants current weight-grads-ieee weight-grads-tf32 --gemm tf32x3 \
  > $OUT/run120_variants.jsonl 2> $OUT/run120_err.txt
cat $OUT/run120_variants.jsonl; tail -3 $OUT/run120_err.txt
