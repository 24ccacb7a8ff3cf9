#!/bin/bash
# Run 220: where a graphed whole DeepPot.eval call goes (call_split.py), water float32 98,304 and 12,288 atoms,
# float64 98,304. Carry [".whl", ".peer"].
set -u
export PYTHONUNBUFFERED=1
P=benchmarks/results/run220/call_split.py
for a in "float32 8" "float32 4" "float64 8"; do
  PYTHONPATH=$PWD:$PWD/benchmarks timeout 150 python3 $P $a 2>&1 | grep -v Warning | tee -a $OUT/run220_call_split.txt
done
cp /tmp/trace_float32_8.json $OUT/ 2>/dev/null; gzip $OUT/*.json
nvidia-smi --query-gpu=name --format=csv,noheader
