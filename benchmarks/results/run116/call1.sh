#!/bin/bash
# Run 116 (one H100): the fitting nets' long-k float32 products split along k (this tree: the eager step's fitting
# kernel and, new, the compiled step's PyTorch fitting) against e2ae2f7 (.old), default and compiled steps.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run116; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el gpu tests
timeout 170 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/kernels/test_fitting.py tests/model/test_analytic.py tests/gpu/test_force_path_gpu.py \
  > $OUT/run116_gpu_tests.txt 2>&1; tail -3 $OUT/run116_gpu_tests.txt
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
run() {  # tree case [steps]
  env PYTHONPATH=$PWD/$1:$PWD/$1/benchmarks timeout 120 python3 $1/$B --steps ${3:-1000} $2 \
    | sed "s#^{#{\"tree\": \"$1\", #" >> $OUT/run116_train.jsonl 2>> $OUT/run116_err.txt
  tail -qn1 $OUT/run116_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['tree'], r['case'], r.get('fused_kernels'), r.get('ms_per_step'), r.get('launch_to_first_step_s'), str(r.get('final', r.get('lcurve', r.get('error', ''))))[:150])"
}
el warm
for tree in . .old; do run $tree water:float32 50 > /dev/null; done
el train
for rep in 1 2; do for c in water:float32 alloy:float32 copper:float32; do run .old $c; run . $c; done; done
el compiled
for c in water:float32:compile alloy:float32:compile; do run .old $c; run . $c; done
el done
