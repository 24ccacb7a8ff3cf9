#!/bin/bash
# Run 173: (1) the float32 atom-tile kernels with their embedding weights' float16 parts made once, per kernel and
# tile (tiles_parts.py); (2) the fitting products with the column tiles of a row block side by side (run 172's
# gemm_variants.py, this tree and 1e836d9 as .old); (3) GPU tests; (4) whole calls, trees alternating.
# Run from the repository root with carry [".peer", ".old", ".whl"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=benchmarks/results
el tiles
timeout 150 env PYTHONPATH=$PWD:$PWD/benchmarks python3 $R/run173/tiles_parts.py > $OUT/run173_tiles.jsonl 2>> $OUT/run173_err.txt
cat $OUT/run173_tiles.jsonl
el products
timeout 100 env PYTHONPATH=$PWD python3 $R/run172/gemm_variants.py new >> $OUT/run173_products.jsonl 2>> $OUT/run173_err.txt
timeout 60 env PYTHONPATH=$PWD/.old python3 $R/run172/gemm_variants.py old >> $OUT/run173_products.jsonl 2>> $OUT/run173_err.txt
python3 -c "
import json
for l in open('$OUT/run173_products.jsonl'):
    r = json.loads(l); print(r['tree'], r['rows'], r.get('product', r.get('probe')), r['tile'], r['ms'])"
el gpu tests
timeout 240 env PYTHONPATH=$PWD:/tmp/site python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/kernels/test_fitting.py tests/kernels/test_descriptor.py tests/gpu/test_infer.py > $OUT/run173_gpu_tests.txt 2>&1
tail -3 $OUT/run173_gpu_tests.txt
el infer
A="--data .peer/data --inputs .peer/inputs"
for tree in . .old . .old; do
  timeout 70 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water copper \
    --precisions float32 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 --compress \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run173_infer.jsonl 2>> $OUT/run173_err.txt
done
python3 -c "
import json
for l in open('$OUT/run173_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', ''))"
el done
tail -5 $OUT/run173_err.txt
