#!/bin/bash
# Session 21, call 4 (H100), run 35: DeePMD-kit 3.2.0 and deeppot (default and compiled) in the same call; accuracy
# of the compiled path on every validation frame after 3000 and 10,000 steps; a profile of the compiled step.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:$PWD/benchmarks
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
el deepmd-kit
(OUT=/tmp/dpout timeout 300 bash .peer/peer/deepmd_train.sh .peer/data .peer/inputs .dpw 500 water:pt:float64 \
   water:pt:float32 copper:pt:float32 alloy:pt:float32 2>&1 | grep -v "^ *$" | tee $OUT/deepmd.log)
B="python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
case_() { el "$*"; timeout 120 $B "$@" 2>/dev/null | grep '^{' | tee -a $OUT/speed.jsonl; }
case_ water:float32
case_ water:float32:compile
case_ --test --steps 3000 water:float32:compile
case_ --test --steps 3000 water:float64:compile
case_ --test water:float64:10000:compile
el profile
timeout 90 $B --profile water:float32:compile 2>&1 | grep -v Warn | head -22 | tee -a $OUT/profile.txt
el end
