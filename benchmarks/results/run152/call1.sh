#!/bin/bash
# Run 152 (one H100): the training step with the training kernels' float64 tanh back on libdevice (this tree), the
# branch-free one (run 151's), and 675df9d (.old); whole inference calls of water, copper and the alloy, this tree
# against .old; the GPU tests of the changed kernels.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run152; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=benchmarks/results/run152
el train
B="--data .peer/data --inputs .peer/inputs --steps 1000"
run() {  # tree variant case
  if [ $2 = old ]; then cmd="$1/benchmarks/train_bench.py"; else cmd="$R/train_variant.py $2"; fi
  env PYTHONPATH=$PWD/$1:$PWD/$1/benchmarks timeout 60 python3 $cmd $B $3 \
    | sed "s#^{#{\"tree\": \"$1\", \"variant\": \"$2\", #" >> $OUT/run152_train.jsonl 2>> $OUT/run152_err.txt
  tail -qn1 $OUT/run152_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['tree'], r['variant'], r['case'], r.get('ms_per_step'), str(r.get('final', r.get('error', '')))[:90])"
}
for rep in 1 2; do
  for v in "ps plain" "ps fast64" ".old old"; do set -- $v; t=$1; [ $t = ps ] && t=.; run $t $2 water:float64; done
  run . plain water:float32; run .old old water:float32
done
el infer
A="--data .peer/data --inputs .peer/inputs"
for tree in . .old; do
  timeout 150 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water copper alloy \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run152_infer.jsonl 2>> $OUT/run152_err.txt
done
python3 -c "
import json
for l in open('$OUT/run152_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('path'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('e_per_atom'), r.get('error', ''))"
el gpu tests
timeout 150 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/kernels/test_activation.py \
  tests/kernels/test_embedding.py tests/kernels/test_fitting.py > $OUT/run152_gpu_tests.txt 2>&1
tail -3 $OUT/run152_gpu_tests.txt
tail -5 $OUT/run152_err.txt
el done
