#!/bin/bash
# Run 151, second call (one H100): all GPU tests of the kernels, the inference path and compression with the new
# tanh; the training step (train_bench.py, 1000 steps) in this tree against 675df9d (.old), water float32/float64.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run151; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el train
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
for rep in 1 2; do for c in water:float32 water:float64; do for tree in . .old; do
  env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks timeout 60 python3 $tree/$B --steps 1000 $c \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run151_train.jsonl 2>> $OUT/run151_err2.txt
  tail -qn1 $OUT/run151_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['tree'], r['case'], r.get('fused_kernels'), r.get('ms_per_step'), str(r.get('final', r.get('error', '')))[:100])"
done; done; done
el gpu tests
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
timeout 400 env PYTHONPATH=$PWD:/tmp/site python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/kernels tests/gpu \
  tests/compress > $OUT/run151_gpu_tests2.txt 2>&1
tail -5 $OUT/run151_gpu_tests2.txt
el done
