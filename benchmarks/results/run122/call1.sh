#!/bin/bash
# Run 122 (one H100): the embedding backward without the zeroed partial-sum buffer (this tree) against 3829323
# (.t_3829323); the same tree with TORCH_BLAS_PREFER_CUBLASLT=1 (PyTorch's GEMMs through cuBLASLt); GPU tests.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run122; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el gpu tests
timeout 200 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/kernels/test_embedding.py tests/gpu/test_force_path_gpu.py > $OUT/run122_gpu_tests.txt 2>&1
tail -3 $OUT/run122_gpu_tests.txt
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
run() {  # tree lt case [steps]
  env TORCH_BLAS_PREFER_CUBLASLT=$2 PYTHONPATH=$PWD/$1:$PWD/$1/benchmarks timeout 120 python3 $1/$B --steps ${4:-1000} $3 \
    | sed "s#^{#{\"tree\": \"$1\", \"cublaslt\": $2, #" >> $OUT/run122_train.jsonl 2>> $OUT/run122_err.txt
  tail -qn1 $OUT/run122_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['tree'], r['cublaslt'], r['case'], r.get('fused_kernels'), r.get('ms_per_step'), str(r.get('final', r.get('lcurve', r.get('error', ''))))[:150])"
}
el warm
for tree in . .t_3829323; do run $tree 0 water:float32 50 > /dev/null; done
el train
for rep in 1 2; do for c in water:float32 water:float64 copper:float32; do
  run .t_3829323 0 $c; run . 0 $c; run . 1 $c
done; done
el done
