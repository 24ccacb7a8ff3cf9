#!/bin/bash
# Run 265 call 1 (one GPU, ~2 minutes; carry .mid and .peer): harness_probe.py on fresh and trained water models at
# 98,304 atoms: the prebuilt-list call synced after every call, batched, and replayed from a CUDA graph.
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=$PWD:$PWD/benchmarks timeout 200 python3 benchmarks/results/run265/harness_probe.py \
  trained=.mid/water/model.dp --rounds 2 2>> $OUT/run265_err1.txt | tee $OUT/run265_harness1.jsonl
tail -3 $OUT/run265_err1.txt
