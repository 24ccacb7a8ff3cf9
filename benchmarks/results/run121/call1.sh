#!/bin/bash
# Run 121 (one H100): the training forces and virial as one Triton kernel each way (this tree) against bdad217
# (.t_bdad217: the split products, no force kernel) and e2ae2f7 (.old); GPU tests; the 10,000-step float64 command.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run121; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el gpu tests
timeout 200 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/kernels/test_scatter.py tests/gpu/test_force_path_gpu.py tests/gpu/test_graph_step.py \
  > $OUT/run121_gpu_tests.txt 2>&1; tail -3 $OUT/run121_gpu_tests.txt
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
run() {  # tree case [steps]
  env PYTHONPATH=$PWD/$1:$PWD/$1/benchmarks timeout 120 python3 $1/$B --steps ${3:-1000} $2 \
    | sed "s#^{#{\"tree\": \"$1\", #" >> $OUT/run121_train.jsonl 2>> $OUT/run121_err.txt
  tail -qn1 $OUT/run121_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['tree'], r['case'], r.get('fused_kernels'), r.get('ms_per_step'), r.get('launch_to_first_step_s'), r.get('wall_s'), str(r.get('final', r.get('lcurve', r.get('error', ''))))[:150])"
}
el warm
for tree in . .t_bdad217 .old; do run $tree water:float32 50 > /dev/null; done
el train
for rep in 1 2; do for c in water:float32 water:float64 copper:float32 alloy:float32; do
  run .old $c; run .t_bdad217 $c; run . $c
done; done
el 10000
run . water:float64:10000 10000
el done
