#!/bin/bash
# Run 129 (one H100): the fitting products fused with their elementwise work (kernels/fitting_gemm.py): a tile sweep
# per layer shape against cuBLAS + the elementwise kernels, whole calls against e57af54 (.old), GPU tests.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run129; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
el sweep
env PYTHONPATH=$PWD timeout 200 python3 benchmarks/results/run129/fitting_gemm_sweep.py > $OUT/run129_sweep.jsonl 2>> $OUT/run129_err.txt
cat $OUT/run129_sweep.jsonl
A="--data .peer/data --inputs .peer/inputs"
el large
for tree in .old . ; do
  env PYTHONPATH=$PWD/$tree timeout 120 python3 $tree/benchmarks/infer_bench.py $A --systems water copper alloy \
    --precisions float32 --sizes 98304 --modes prebuilt_nlist --compress --repeat-seconds 0.5 \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run129_infer.jsonl 2>> $OUT/run129_err.txt
done
python3 -c "
import json
for l in open('$OUT/run129_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('mode'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', ''))"
el tests
env PYTHONPATH=$PWD:/tmp/site timeout 150 python3 -m pytest -q -x tests/kernels/test_fitting.py \
  tests/kernels/test_descriptor.py tests/gpu/test_infer.py > $OUT/run129_gpu_tests.txt 2>&1
tail -3 $OUT/run129_gpu_tests.txt
tail -5 $OUT/run129_err.txt
el done
