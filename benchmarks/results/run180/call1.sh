#!/bin/bash
# Run 180: the timeline of whole 98,304-atom water calls (timeline.py): wall against kernel time, the GPU's idle
# gaps and what the host did meanwhile; float32, float32 compressed, float64. Run from the repository root with
# carry [".peer"].
set -u
export PYTHONUNBUFFERED=1
mkdir -p /tmp/prof
for args in "float32" "float32 --compressed" "float64"; do
  echo "== $args"
  timeout 200 env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/results/run180/timeline.py /tmp/prof $args \
    2>> $OUT/run180_err.txt | tee -a $OUT/run180_timeline.txt
done
nvidia-smi --query-gpu=name --format=csv,noheader
