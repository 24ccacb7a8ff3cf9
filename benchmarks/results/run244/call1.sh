#!/bin/bash
# Run 244 (one GPU): (1) the fitting products' f16x3 GEMM with x split beforehand against the kept kernel
# (presplit_probe.py, water's shapes at 98,304 rows); (2) the compiled training step with the fused f16x3 embedding
# kernels against the rule's choice (PyTorch's embedding, compiled with the rest, where one net serves each slot).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el probe
PYTHONPATH=$PWD timeout 170 python3 benchmarks/results/run244/presplit_probe.py 98304 | tee $OUT/run244_presplit.jsonl
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
el train
for c in water:float32:compile:fused water:float32:compile copper:float32:compile:fused copper:float32:compile \
         water:float64:compile:fused water:float64:compile; do
  env PYTHONPATH=$PWD:$PWD/benchmarks timeout 75 python3 $B --steps 1000 $c >> $OUT/run244_train.jsonl 2>> $OUT/run244_err.txt
  tail -n1 $OUT/run244_train.jsonl | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"fused_kernels": [a-z]*\|"launch_to_first_step_s": [0-9.]*' | tr '\n' ' '; echo
done
el done
