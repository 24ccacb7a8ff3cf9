#!/bin/bash
# Run 95 (one H100): FlatAdam reading the captured gradients in place (no copy), and tf32 inference through the
# fitting nets: GPU tests; training steps against 6fa0c4d (.old) in the same call, alternating.
set -u
export PYTHONUNBUFFERED=1
timeout 240 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/kernels/test_adam.py \
  tests/gpu/test_graph_step.py tests/gpu/test_infer.py > $OUT/run95_gpu_tests.txt 2>&1; tail -4 $OUT/run95_gpu_tests.txt
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
for c in copper:float32:compile water:float64 water:float32:compile copper:float32; do
  for tree in . .old . .old; do
    env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks timeout 100 python3 $tree/$B $c \
      | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run95_train.jsonl 2>> $OUT/run95_err.txt
    tail -qn1 $OUT/run95_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['tree'], r['case'], r.get('ms_per_step'), r.get('launch_to_first_step_s'), str(r.get('final', r.get('lcurve', r.get('error', ''))))[:120])"
    case $c in water:float32:compile|copper:float32) [ $tree = .old ] && break;; esac
  done
done
