#!/bin/bash
# Run 118 (one H100): the step after d116b01 (one part is the bmm of the expanded input again) against e2ae2f7 (.old).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run118; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
run() {  # tree case [steps]
  env PYTHONPATH=$PWD/$1:$PWD/$1/benchmarks timeout 120 python3 $1/$B --steps ${3:-1000} $2 \
    | sed "s#^{#{\"tree\": \"$1\", #" >> $OUT/run118_train.jsonl 2>> $OUT/run118_err.txt
  tail -qn1 $OUT/run118_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['tree'], r['case'], r.get('fused_kernels'), r.get('ms_per_step'), r.get('launch_to_first_step_s'), str(r.get('final', r.get('lcurve', r.get('error', ''))))[:150])"
}
el warm
for tree in . .old; do run $tree water:float32 50 > /dev/null; done
el train
for rep in 1 2; do for c in water:float64 water:float32; do run .old $c; run . $c; done; done
el done
