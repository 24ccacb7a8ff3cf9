#!/bin/bash
# Run 115 (one H100): the training embedding backward reading layer 3 from the forward's G and dG/ds (no W3 GEMMs
# in the backward) and the fitting nets' long-k GEMMs split along k (this tree), against e2ae2f7 (.old);
# DEEPPOT_SPLIT_K_BLOCKS=0 turns the split off (the backward change alone), other values cap the blocks.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run115; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el gpu tests
timeout 240 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/kernels/test_embedding.py tests/kernels/test_fitting.py tests/gpu/test_force_path_gpu.py \
  > $OUT/run115_gpu_tests.txt 2>&1; tail -3 $OUT/run115_gpu_tests.txt
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
run() {  # tree split case [steps]
  env DEEPPOT_SPLIT_K_BLOCKS=$2 PYTHONPATH=$PWD/$1:$PWD/$1/benchmarks timeout 150 python3 $1/$B --steps ${4:-1000} $3 \
    | sed "s#^{#{\"tree\": \"$1\", \"split_k_blocks\": $2, #" >> $OUT/run115_train.jsonl 2>> $OUT/run115_err.txt
  tail -qn1 $OUT/run115_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['tree'], r['split_k_blocks'], r['case'], r.get('ms_per_step'), r.get('launch_to_first_step_s'), str(r.get('final', r.get('lcurve', r.get('error', ''))))[:150])"
}
el warm
for tree in . .old; do run $tree 792 water:float32 50 > /dev/null; done
el train
for c in water:float32 water:float64 copper:float32 alloy:float32; do
  for rep in 1 2; do run .old 0 $c; run . 0 $c; run . 792 $c; done
done
run .old 0 water:float32:bs4 600; run . 792 water:float32:bs4 600; run . 3000 water:float32:bs4 600
el done
