#!/bin/bash
# Session 21, call 2 (H100), run 33: where the start-up goes (imports, the start-up line of `deeppot train`, a
# remembered embedding choice, torch._dynamo imported on a thread); compile with PyTorch's embedding on every case.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:$PWD/benchmarks
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
{ python3 -X importtime -c "import deeppot.cli.main" 2>&1 | sort -t'|' -k2 -n | tail -5
  python3 -X importtime -c "import torch; import torch._dynamo" 2>&1 | sort -t'|' -k2 -n | tail -3
  python3 -c "import time; t=time.time(); import torch; t1=time.time(); torch.zeros(1, device='cuda'); t2=time.time(); import torch._dynamo; t3=time.time(); import triton; print(f'import torch {t1-t:.2f} s, CUDA context {t2-t1:.2f} s, torch._dynamo {t3-t2:.2f} s, triton after {time.time()-t3:.2f} s')"
} 2>&1 | tee $OUT/imports.txt
mkdir -p /tmp/w && cp -r examples/water/data /tmp/w/
python3 - <<'PY'
import json
d = json.load(open("examples/water/input.json"))
d["training"].update(numb_steps=1, disp_freq=1, save_freq=1)
json.dump(d, open("/tmp/w/input.json", "w"), indent=1)
PY
R=$PWD
for k in cold warm warm; do el "deeppot train, 1 step, $k"; (cd /tmp/w && python3 -m deeppot train input.json 2>&1 | grep -E "start-up|embedding net" | tee -a $OUT/startup.txt); done
for k in 1 2; do el "deeppot train with torch._dynamo imported on a thread"; (cd /tmp/w && python3 $R/benchmarks/results/run32_39/bg_dynamo.py train input.json 2>&1 | grep -E "start-up" | tee -a $OUT/startup.txt); done
B="python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
case_() { el "$1"; timeout "$2" $B "$1" 2>/dev/null | grep '^{' | tee -a $OUT/speed.jsonl; }
case_ water:float64:compile:plain 90
case_ copper:float32:compile:plain 90
case_ alloy:float32:compile:plain 90
case_ water:float32:odd 40
case_ water:float32:odd:compile 90
case_ water:float32:odd:compile:plain 90
case_ water:float32 40
el end
