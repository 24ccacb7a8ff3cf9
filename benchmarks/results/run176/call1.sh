#!/bin/bash
# Run 176: the session's final tree (the fitting products with W's parts made once and the column tiles side by
# side; dE/dT divided by nnei inside the gradient kernels) against 1e836d9 (.old): GPU tests of the kernels it
# changed; whole calls (water and copper, both precisions, compressed too), trees alternating twice.
# Run from the repository root with carry [".peer", ".old", ".whl"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el gpu tests
timeout 300 env PYTHONPATH=$PWD:/tmp/site python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/kernels/test_descriptor.py tests/compress/test_kernels.py tests/gpu/test_infer.py \
  > $OUT/run176_gpu_tests.txt 2>&1
tail -3 $OUT/run176_gpu_tests.txt
el infer
A="--data .peer/data --inputs .peer/inputs"
for tree in . .old . .old; do
  timeout 70 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water copper \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 --compress \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run176_infer.jsonl 2>> $OUT/run176_err.txt
done
python3 -c "
import json
for l in open('$OUT/run176_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', ''))"
el done
tail -5 $OUT/run176_err.txt
