#!/bin/bash
# Run 125 (one H100): the odd shape (embedding [10, 20, 40], axis_neuron 8, sel [37, 61], batch 3; issue 11's
# "never slower" case), default (timed embedding choice) and with PyTorch's embedding (:plain), this tree against
# e2ae2f7 (.old).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run125; mkdir -p $TMPDIR
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
run() {  # tree case
  env PYTHONPATH=$PWD/$1:$PWD/$1/benchmarks timeout 100 python3 $1/$B --steps 1000 $2 \
    | sed "s#^{#{\"tree\": \"$1\", #" >> $OUT/run125_train.jsonl 2>> $OUT/run125_err.txt
  tail -qn1 $OUT/run125_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['tree'], r['case'], r.get('fused_kernels'), r.get('ms_per_step'), str(r.get('final', r.get('error', '')))[:120])"
}
run . water:float32:odd:50 > /dev/null
for rep in 1 2; do for c in water:float32:odd water:float32:odd:plain; do run .old $c; run . $c; done; done
