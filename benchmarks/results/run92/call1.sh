#!/bin/bash
# Run 92 (one H100): FlatAdam, the Adam update as one Triton kernel over flat buffers: GPU tests, the update alone
# against FusedAdam, and training steps against 51830e7 (.old) in the same call.
set -u
export PYTHONUNBUFFERED=1
timeout 200 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/kernels/test_adam.py \
  tests/train/test_adam.py tests/gpu/test_graph_step.py tests/gpu/test_force_path_gpu.py \
  > $OUT/run92_gpu_tests.txt 2>&1; tail -4 $OUT/run92_gpu_tests.txt
timeout 60 env PYTHONPATH=$PWD python3 benchmarks/results/run92/adam_flat.py > $OUT/run92_adam.jsonl 2>&1
cat $OUT/run92_adam.jsonl | cut -c1-300
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
for c in copper:float32 water:float64 water:float32 copper:float32:compile; do
  for tree in . .old . .old; do
    env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks timeout 100 python3 $tree/$B $c \
      | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run92_train.jsonl 2>> $OUT/run92_err.txt
    tail -qn1 $OUT/run92_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['tree'], r['case'], r.get('ms_per_step'), r.get('launch_to_first_step_s'), str(r.get('final', r.get('lcurve', r.get('error', ''))))[:120])"
    [ $c = copper:float32:compile ] && [ $tree = .old ] && break
  done
done
