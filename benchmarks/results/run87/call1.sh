#!/bin/bash
# Run 87 (one H100): compile options of the inference kernels alone and in whole evaluations (register caps,
# bf16x6 GEMMs); the training step with a register cap on the fused embedding kernels.
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
timeout 360 python3 benchmarks/results/run87/kernel_options.py $OUT/run87_options.jsonl float32 float64 2>&1 \
  | grep -v Warn | cut -c1-260
for cap in 0 168 200; do
  for c in water:float64 water:float32 copper:float32; do
    DEEPPOT_BENCH_T_LAUNCH=$(date +%s.%N) MAXNREG=$cap timeout 60 python3 benchmarks/results/run87/train_maxnreg.py \
      --case $c --data .peer/data --inputs .peer/inputs --steps 1000 2>>$OUT/run87_err.txt | grep RESULT \
      | sed "s#^RESULT {#{\"maxnreg\": $cap, #" >> $OUT/run87_train.jsonl
  done
done
python3 -c "
import json
for l in open('$OUT/run87_train.jsonl'):
    r = json.loads(l); print(r['maxnreg'], r['case'], r.get('ms_per_step'), r.get('final', r.get('lcurve', ''))) " | cut -c1-200
