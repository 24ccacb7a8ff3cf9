#!/bin/bash
# Session 21, call 5 (H100), run 36: forces, virial and loss compiled as one function (force_path.batch_loss) against
# run 34's compiled force function alone; GPU tests; a profile of the new compiled step.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:$PWD/benchmarks
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
el gpu tests
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_force_path_gpu.py tests/gpu/test_graph_step.py \
  2>&1 | tail -4 | tee $OUT/gpu_tests.txt
B="python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
case_() { el "$*"; timeout 120 $B "$@" 2>/dev/null | grep '^{' | tee -a $OUT/speed.jsonl; }
for c in water:float32 water:float64 copper:float32 alloy:float32 water:float32:odd; do case_ $c:compile; done
case_ water:float64:10000:compile
el profile
timeout 90 $B --profile water:float32:compile 2>&1 | grep -v Warn | head -22 | tee -a $OUT/profile.txt
el end
