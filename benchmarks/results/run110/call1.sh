#!/bin/bash
# Run 110 (one H100): the fitting kernel's contiguous bias and timestep gradients (this tree) against f35f9e0 (.t_f35f9e0);
# batches of 4 frames (labels strided in the loss kernel, pair vectors copied for the pair-gradient kernel) against
# f033b12 (.old); the GPU tests of every kernel and of the training step.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run110; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el gpu tests
timeout 300 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/kernels \
  tests/gpu/test_kernel_choice_gpu.py tests/gpu/test_graph_step.py tests/gpu/test_force_path_gpu.py \
  > $OUT/run110_gpu_tests.txt 2>&1; tail -3 $OUT/run110_gpu_tests.txt
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
run() {  # tree case [steps]
  env PYTHONPATH=$PWD/$1:$PWD/$1/benchmarks timeout 150 python3 $1/$B --steps ${3:-1000} $2 \
    | sed "s#^{#{\"tree\": \"$1\", #" >> $OUT/run110_train.jsonl 2>> $OUT/run110_err.txt
  tail -qn1 $OUT/run110_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['tree'], r['case'], r.get('ms_per_step'), r.get('launch_to_first_step_s'), r.get('wall_s'), str(r.get('final', r.get('lcurve', r.get('error', ''))))[:150])"
}
el warm
for tree in . .t_f35f9e0 .old; do run $tree water:float64 50 > /dev/null; done
el train
for c in water:float64 water:float32 copper:float32 water:float64; do for tree in . .t_f35f9e0; do run $tree $c; done; done
for c in water:float64:bs4 water:float32:bs4; do for tree in . .old; do run $tree $c 600; done; done
el done
