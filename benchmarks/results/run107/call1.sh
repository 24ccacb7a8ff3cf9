#!/bin/bash
# Run 107 (one H100): the uncompiled training step with the fitting kernels (1f4d018, .t_1f4d018), then the fused
# loss (378b38a, .t_378b38a), then the pair-gradient kernels (this tree), against f033b12 (.old), alternating in one
# call; GPU tests of the new kernels; the 10,000-step float64 command; a profile of the new water float64 step.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run107; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el gpu tests
timeout 200 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/kernels/test_fitting.py \
  tests/kernels/test_loss.py tests/kernels/test_pair_grad.py tests/gpu/test_graph_step.py \
  tests/gpu/test_force_path_gpu.py > $OUT/run107_gpu_tests.txt 2>&1; tail -4 $OUT/run107_gpu_tests.txt
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
run() {  # tree case [steps]
  env PYTHONPATH=$PWD/$1:$PWD/$1/benchmarks timeout 150 python3 $1/$B --steps ${3:-1000} $2 \
    | sed "s#^{#{\"tree\": \"$1\", #" >> $OUT/run107_train.jsonl 2>> $OUT/run107_err.txt
  tail -qn1 $OUT/run107_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['tree'], r['case'], r.get('ms_per_step'), r.get('launch_to_first_step_s'), r.get('wall_s'), str(r.get('final', r.get('lcurve', r.get('error', ''))))[:150])"
}
el warm  # each tree's first run compiles its Triton kernels and times the embedding choice: not measured
for tree in . .old .t_1f4d018 .t_378b38a; do run $tree water:float64 50 > /dev/null; done
el train
for c in water:float64 water:float32 copper:float32; do
  for tree in . .old .t_1f4d018 .t_378b38a; do run $tree $c; done
done
for c in alloy:float32 water:float32:odd; do for tree in . .old; do run $tree $c; done; done
for tree in . .old; do run $tree water:float64; done
el 10000
for tree in . .old; do run $tree water:float64:10000 10000; done
el profile
env PYTHONPATH=$PWD:$PWD/benchmarks timeout 100 python3 $B --steps 30 --profile water:float64 > $OUT/run107_profile_water_float64.txt 2>&1
head -40 $OUT/run107_profile_water_float64.txt
el done
