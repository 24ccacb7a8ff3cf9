#!/bin/bash
# Run 75 (one H100), at e5f5b92: Inductor's GEMM autotuning (TORCHINDUCTOR_MAX_AUTOTUNE_GEMM=1: Triton templates
# benchmarked against cuBLAS per shape, with epilogue fusion) on the compiled copper and water float32 steps,
# against the same code without it in the same call.
set -u
export PYTHONUNBUFFERED=1
B="env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
for c in copper:float32:compile water:float32:compile; do
  $B $c | sed 's#^{#{"autotune": false, #' >> $OUT/run75_train.jsonl 2>> $OUT/run75_err.txt
  tail -qn1 $OUT/run75_train.jsonl | cut -c1-150
  TORCHINDUCTOR_MAX_AUTOTUNE_GEMM=1 timeout 200 $B $c | sed 's#^{#{"autotune": true, #' >> $OUT/run75_train.jsonl 2>> $OUT/run75_err.txt
  tail -qn1 $OUT/run75_train.jsonl | cut -c1-150
done
python3 -c "
import json
for l in open('$OUT/run75_train.jsonl'):
    d = json.loads(l); print(d['autotune'], d['case'], d['ms_per_step'], d.get('launch_to_first_step_s'), d['final'])"
