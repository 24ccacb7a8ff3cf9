#!/bin/bash
# Run 240 (one H100): the training embedding kernels' products as f16x3 (issue 11). Kernels alone
# (embed_kernel_bench, tf32x3 / f16x3 / tf32), whole training steps of this tree against the session's start
# (.old = e2028e4), alternating, and the GPU tests of the changed kernels.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el kernels
for c in water copper alloy; do
  PYTHONPATH=$PWD python3 benchmarks/embed_kernel_bench.py --case $c --configs 16:8:tf32x3 16:8:f16x3 16:8:tf32 \
    >> $OUT/run240_kernels.jsonl 2>> $OUT/run240_err.txt
done
cat $OUT/run240_kernels.jsonl
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
one() {  # tree case
  (cd $1 && env PYTHONPATH=$PWD:$PWD/benchmarks timeout 100 python3 $B --steps 1000 $2) > /tmp/one.json 2>> $OUT/run240_err.txt
  python3 -c "
import json,sys
r=json.loads(open('/tmp/one.json').read().strip().splitlines()[-1]); r['tree']='$1'; print(json.dumps(r))
print('$1', r['case'], r.get('fused_kernels'), r.get('ms_per_step'), r.get('launch_to_first_step_s'), str(r.get('final', r.get('error', '')))[:120], file=sys.stderr)" >> $OUT/run240_train.jsonl
}
ln -sfn $PWD/.peer .old/.peer
el train round 1
for c in water:float32 copper:float32 alloy:float32 water:float32:odd; do one .old $c; one . $c; done
el train round 2
for c in water:float32 copper:float32; do one . $c; one .old $c; done
el tests
timeout 200 python3 -m pytest -q -x tests/kernels/test_embedding.py tests/kernels/test_precision.py \
  tests/gpu/test_force_path_gpu.py tests/gpu/test_graph_step.py 2>&1 | tail -5 | tee $OUT/run240_gpu_tests.txt
el done
