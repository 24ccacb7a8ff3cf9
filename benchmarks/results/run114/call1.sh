#!/bin/bash
# Run 114 (one H100): issue 11 item 3 with the current default step: throughput and model FLOP utilisation of water
# batches of 1, 4 and 16 frames and of 1,536-atom frames, float32 and float64.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run114; mkdir -p $TMPDIR
export PYTHONPATH=$PWD:$PWD/benchmarks
timeout 560 python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs water:float32:600 \
  water:float32:bs4:600 water:float32:bs16:300 water:float32:frame1536:300 water:float64:600 water:float64:bs4:600 \
  water:float64:bs16:300 water:float64:frame1536:300 > $OUT/run114_train.jsonl 2>> $OUT/run114_err.txt
python3 -c "
import json
for l in open('$OUT/run114_train.jsonl'):
    r = json.loads(l); print(r['case'], r.get('ms_per_step'), r.get('atoms_per_s'), r.get('model_tflops'), r.get('mfu'), r.get('peak_mem_MiB'), str(r.get('error', ''))[:300])"
