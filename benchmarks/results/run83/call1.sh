#!/bin/bash
# Run 83 (one H100): stage-by-stage times of one 98,304-atom evaluation (current main).
set -u
export PYTHONUNBUFFERED=1
env PYTHONPATH=$PWD:$PWD/benchmarks timeout 400 python3 benchmarks/results/run83/stages.py $OUT/run83_stages.jsonl \
  water:float32 water:float32:compressed water:float64 copper:float32:compressed 2>&1 | grep -v Warn | tail -20
