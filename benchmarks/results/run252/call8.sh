#!/bin/bash
# Run 252 call 8, prepared and not run (no device time was left; apply bwd_no_licm.patch to this tree first), one
# GPU: the training embedding backward kernel's chunk loop without loop-invariant code motion
# (ptxas on the CPU: float32 f16x3 596 -> 36 B spilled, float64 960 -> 672 B): train_bench.py with the fused
# kernels forced, water float32 and float64, 1000 steps, this tree and .old (5d442c6), one process a case.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
R=$PWD
ln -sfn $PWD/.peer .old/.peer
for t in .old .; do
  el "train $t"
  (cd $t && PYTHONPATH=$PWD timeout 85 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
    --steps 1000 water:float32:fused water:float64:fused) 2>> $OUT/run252_err8.txt \
    | sed "s/^{/{\"tree\": \"$t\", /" | tee -a $OUT/run252_call8.jsonl \
    | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"launch_s[^,]*' | tr '\n' ' '
  echo
done
el done
