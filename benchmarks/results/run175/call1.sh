#!/bin/bash
# Run 175: the session's final tree (fitting products with W's parts made once, the gradient atom tile on
# (2, 32, 4)) against 1e836d9 (.old): GPU tests of the kernels it changed; whole calls (water and copper,
# float32, compressed too), trees alternating four times; the kernel profile of a water call.
# Run from the repository root with carry [".peer", ".old", ".whl"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=benchmarks/results
el gpu tests
timeout 240 env PYTHONPATH=$PWD:/tmp/site python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/kernels/test_fitting.py tests/kernels/test_precision.py tests/kernels/test_descriptor.py \
  tests/gpu/test_infer.py > $OUT/run175_gpu_tests.txt 2>&1
tail -3 $OUT/run175_gpu_tests.txt
el infer
A="--data .peer/data --inputs .peer/inputs"
for tree in . .old . .old . .old . .old; do
  timeout 70 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water copper \
    --precisions float32 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 --compress \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run175_infer.jsonl 2>> $OUT/run175_err.txt
done
python3 -c "
import json
for l in open('$OUT/run175_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', ''))"
el profile
mkdir -p /tmp/prof
timeout 150 env PYTHONPATH=$PWD:$PWD/benchmarks python3 $R/run128/infer_kernels.py /tmp/prof > $OUT/run175_kernels.txt 2>> $OUT/run175_err.txt
grep -A14 "== water" $OUT/run175_kernels.txt
el done
tail -5 $OUT/run175_err.txt
