#!/bin/bash
# Run 158: the compressed kernels on run 157's tiles (float32 both kernels (1,2,1); float64 T (2,2,1), gradient
# (1,2,1)), this tree against 14b52fd (.old): GPU tests, whole calls; the fitting products' operand split probed.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run158; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=benchmarks/results/run158
el gpu tests
timeout 120 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/compress/test_kernels.py \
  tests/gpu/test_infer.py > $OUT/run158_gpu_tests.txt 2>&1
tail -3 $OUT/run158_gpu_tests.txt
el infer
A="--data .peer/data --inputs .peer/inputs"
for tree in . .old . .old; do
  timeout 95 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water copper \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 --compress \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run158_infer.jsonl 2>> $OUT/run158_err.txt
done
python3 -c "
import json
for l in open('$OUT/run158_infer.jsonl'):
    r=json.loads(l)
    if 'compressed' in r.get('case', ''): print(r.get('tree'), r.get('case'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', ''))"
el gemm split probe
timeout 240 env PYTHONPATH=$PWD python3 $R/gemm_split.py > $OUT/run158_gemm_split.jsonl 2>> $OUT/run158_err.txt
cat $OUT/run158_gemm_split.jsonl
tail -5 $OUT/run158_err.txt
el done
