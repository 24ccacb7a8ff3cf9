#!/bin/bash
# Run 172: the fitting products (f16x3) with W's float16 parts made once (fitting_gemm.weight_parts) and two
# running sums, against 1e836d9 (.old): GPU tests of the products, the products one by one (tiles swept, the
# three ways of splitting probed), then whole calls (water and copper, float32, compressed too), trees alternating.
# Run from the repository root with carry [".peer", ".old", ".whl"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=benchmarks/results/run172
el gpu tests
timeout 200 env PYTHONPATH=$PWD:/tmp/site python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/kernels/test_fitting.py tests/gpu/test_infer.py > $OUT/run172_gpu_tests.txt 2>&1
tail -3 $OUT/run172_gpu_tests.txt
el products
timeout 150 env PYTHONPATH=$PWD python3 $R/gemm_variants.py new --sweep --probe >> $OUT/run172_products.jsonl 2>> $OUT/run172_err.txt
timeout 60 env PYTHONPATH=$PWD/.old python3 $R/gemm_variants.py old >> $OUT/run172_products.jsonl 2>> $OUT/run172_err.txt
python3 -c "
import json
for l in open('$OUT/run172_products.jsonl'):
    r = json.loads(l); print(r['tree'], r['rows'], r.get('product', r.get('probe')), r['tile'], r['ms'], r.get('max_err', ''))"
el infer
A="--data .peer/data --inputs .peer/inputs"
for tree in . .old . .old; do
  timeout 80 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water copper \
    --precisions float32 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 --compress \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run172_infer.jsonl 2>> $OUT/run172_err.txt
done
python3 -c "
import json
for l in open('$OUT/run172_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', ''))"
el done
tail -5 $OUT/run172_err.txt
