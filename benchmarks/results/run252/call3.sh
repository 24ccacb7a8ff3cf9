#!/bin/bash
# Run 252 call 3 (one GPU): the fitting products (no epilogue) against persistent TMA variants (gemm_probe.py).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el probe
PYTHONPATH=$PWD timeout 400 python3 benchmarks/results/run252/gemm_probe.py --rows 65536 \
  2>> $OUT/run252_err3.txt | tee $OUT/run252_call3.jsonl
tail -5 $OUT/run252_err3.txt
el done
