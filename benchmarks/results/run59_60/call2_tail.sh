#!/bin/bash
# (First design, replaced: the dropped slots' terms computed from the nets each step (a differentiable tail). Its outputs
# are kept as run60_tail_*: no faster than before, and the alloy run ended in NaN.)
# Run 60 (one H100): training lists trimmed to the data's most neighbours (deeppot/model/slots.py) against the
# tree before (.old = 459715e) in the same call: GPU tests of the training kernels and steps, then train_bench
# 1000 steps per case (default path: timed embedding choice, CUDA graph), new and old, and water float64 3000
# steps with --test (accuracy on all validation frames).
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 240 env PYTHONPATH=$PWD:$PWD/benchmarks python3 -m pytest -q -p no:cacheprovider tests/kernels/test_embedding.py \
    tests/gpu/test_graph_step.py tests/gpu/test_force_path_gpu.py tests/gpu/test_kernel_choice_gpu.py \
    tests/model/test_slots.py > $OUT/run60_gpu_tests.txt 2>&1
tail -3 $OUT/run60_gpu_tests.txt
CASES="water:float64 water:float32 copper:float32 alloy:float32"
for c in $CASES; do
  env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
      --steps 1000 $c >> $OUT/run60_train.jsonl 2>> $OUT/run60_err.txt
  env PYTHONPATH=$PWD/.old:$PWD/.old/benchmarks python3 .old/benchmarks/train_bench.py --data .peer/data \
      --inputs .peer/inputs --steps 1000 $c >> $OUT/run60_train_before.jsonl 2>> $OUT/run60_err.txt
done
env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
    --steps 3000 --test water:float64 >> $OUT/run60_train.jsonl 2>> $OUT/run60_err.txt
grep -h "trimmed\|neighbour lists of" $OUT/run60_err.txt | head -3
python3 - $OUT <<'PY'
import json, sys
for name in ("run60_train_before.jsonl", "run60_train.jsonl"):
    for line in open(f"{sys.argv[1]}/{name}"):
        r = json.loads(line)
        print(name, r["case"], r.get("steps"), r.get("ms_per_step"), r.get("fused_kernels"),
              r.get("launch_to_first_step_s"), r.get("dp_test_validation"))
PY
