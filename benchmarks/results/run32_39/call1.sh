#!/bin/bash
# Session 21, call 1 (H100), run 32: training start-up broken down by phase, torch.compile with the fused embedding
# kernels kept (graph break around them) against the fused default and compile with PyTorch's embedding; profiles.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:$PWD/benchmarks
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -X importtime -c "import deeppot.train.trainer" 2>&1 | sort -t'|' -k2 -n | tail -4
python3 -c "import time; t=time.time(); import torch; t1=time.time(); torch.cuda.init(); torch.zeros(1, device='cuda'); print(f'import torch {t1-t:.2f} s, CUDA context {time.time()-t1:.2f} s')"
B="python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
case_() { el "$1"; timeout "$2" $B "$1" 2>$OUT/err_$1.log | grep '^{' | tee -a $OUT/speed.jsonl; }
case_ water:float32:200 90          # cold Triton cache
case_ water:float32 40
case_ water:float32:compile 150      # cold Inductor cache
case_ water:float32:compile 60       # warm
case_ water:float32:compile:plain 120
el profiles
for c in water:float32 water:float32:compile; do timeout 60 $B --profile $c 2>&1 | grep -v Warn | head -22 | tee -a $OUT/profiles.txt; done
case_ water:float64 40
case_ water:float64:compile 120
case_ copper:float32 40
case_ copper:float32:compile 100
case_ alloy:float32 40
case_ alloy:float32:compile 100
el end
