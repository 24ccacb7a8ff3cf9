#!/bin/bash
# Run 197: the host syncs of a whole DeepPot.eval call and its phases (sync_probe.py), water float32 at 98,304 and
# 12,288 atoms and float64 at 98,304. Carry [".whl", ".peer"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site
for args in "float32 8" "float32 4" "float64 8"; do
  timeout 150 python3 benchmarks/results/run197/sync_probe.py $OUT $args 2>&1 | grep -v Warning > $OUT/run197_sync_${args// /_}.txt
  cat $OUT/run197_sync_${args// /_}.txt
done
nvidia-smi --query-gpu=name --format=csv,noheader
