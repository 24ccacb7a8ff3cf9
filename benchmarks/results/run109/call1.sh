#!/bin/bash
# Run 109 (one H100): the kept step (fitting and loss kernels; pair-gradient kernels one program per atom, float32
# only; scalars in float64) against f033b12 (.old), alternating: GPU tests of the new kernels, the 10,000-step
# float64 command twice each, the float32 cases once.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run109; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el gpu tests
timeout 100 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/kernels/test_pair_grad.py \
  tests/kernels/test_loss.py tests/kernels/test_env_mat.py > $OUT/run109_gpu_tests.txt 2>&1; tail -2 $OUT/run109_gpu_tests.txt
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
run() {  # tree case [steps]
  env PYTHONPATH=$PWD/$1:$PWD/$1/benchmarks timeout 150 python3 $1/$B --steps ${3:-1000} $2 \
    | sed "s#^{#{\"tree\": \"$1\", #" >> $OUT/run109_train.jsonl 2>> $OUT/run109_err.txt
  tail -qn1 $OUT/run109_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['tree'], r['case'], r.get('ms_per_step'), r.get('launch_to_first_step_s'), r.get('wall_s'), str(r.get('final', r.get('lcurve', r.get('error', ''))))[:150])"
}
el warm
run . water:float64 50 > /dev/null
el 10000
for i in 1 2; do for tree in . .old; do run $tree water:float64:10000 10000; done; done
el train
for c in water:float32 copper:float32 alloy:float32; do for tree in . .old; do run $tree $c; done; done
el done
