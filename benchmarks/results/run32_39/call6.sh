#!/bin/bash
# Session 21, call 6 (H100), run 37: the final code: GPU tests, compiled cases (validation's graph now compiled at
# set-up as validation calls it), 10,000 float64 steps compiled and not, start-up of `deeppot train`.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:$PWD/benchmarks
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
el gpu tests
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_force_path_gpu.py tests/gpu/test_graph_step.py \
  tests/gpu/test_kernel_choice_gpu.py 2>&1 | tail -4 | tee $OUT/gpu_tests.txt
B="python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
case_() { el "$*"; timeout 120 $B "$@" 2>/dev/null | grep '^{' | tee -a $OUT/speed.jsonl; }
for c in water:float32 water:float64 copper:float32 alloy:float32; do case_ $c:compile; done
case_ water:float64:10000:compile
case_ water:float64:10000
mkdir -p /tmp/w && cp -r examples/water/data /tmp/w/
python3 - <<'PY'
import json
d = json.load(open("examples/water/input.json"))
d["training"].update(numb_steps=1, disp_freq=1, save_freq=1)
json.dump(d, open("/tmp/w/input.json", "w"), indent=1)
PY
for k in cold warm warm; do el "deeppot train, 1 step, $k"; (cd /tmp/w && python3 -m deeppot train input.json 2>&1 | grep -E "start-up" | tee -a $OUT/startup.txt); done
el end
