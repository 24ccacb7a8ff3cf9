#!/bin/bash
# Session 21, call 3 (H100), run 34: the GPU tests of the force path, FusedAdam and the kernel choice; start-up of
# `deeppot train` without torch.optim; every case with the default path and with compile (the force-path rule).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:$PWD/benchmarks
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
el gpu tests
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_force_path_gpu.py tests/gpu/test_kernel_choice_gpu.py \
  tests/gpu/test_graph_step.py 2>&1 | tail -15 | tee $OUT/gpu_tests.txt
mkdir -p /tmp/w && cp -r examples/water/data /tmp/w/
python3 - <<'PY'
import json
d = json.load(open("examples/water/input.json"))
d["training"].update(numb_steps=1, disp_freq=1, save_freq=1)
json.dump(d, open("/tmp/w/input.json", "w"), indent=1)
PY
for k in cold warm warm; do el "deeppot train, 1 step, $k"; (cd /tmp/w && python3 -m deeppot train input.json 2>&1 | grep -E "start-up|embedding net" | tee -a $OUT/startup.txt); done
B="python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
case_() { el "$1"; timeout "$2" $B "$1" 2>/dev/null | grep '^{' | tee -a $OUT/speed.jsonl; }
for c in water:float32 water:float64 copper:float32 alloy:float32; do case_ $c 45; done
for c in water:float32 water:float64 copper:float32 alloy:float32; do case_ $c:compile 100; done
case_ water:float64:10000 60
el end
