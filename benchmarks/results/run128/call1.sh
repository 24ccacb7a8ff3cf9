#!/bin/bash
# Run 128 (one H100): inference's fitting nets through the fitting kernels' forward (one Triton kernel a layer each
# way, kernels/fitting.value_and_input_grad) against 6a055e5 (.old, PyTorch's elementwise kernels): whole calls at
# ~100k atoms and graphed small systems, kernel profiles of both trees, the GPU tests of the touched paths.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run128; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
A="--data .peer/data --inputs .peer/inputs"
el large
for tree in .old . ; do
  env PYTHONPATH=$PWD/$tree timeout 150 python3 $tree/benchmarks/infer_bench.py $A --systems water copper alloy \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --compress --repeat-seconds 0.5 \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run128_infer.jsonl 2>> $OUT/run128_err.txt
done
el small
for tree in .old . ; do
  env PYTHONPATH=$PWD/$tree timeout 90 python3 $tree/benchmarks/infer_bench.py $A --systems water copper \
    --precisions float32 float64 --sizes 192 1536 --modes graphed --repeat-seconds 0.5 \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run128_infer.jsonl 2>> $OUT/run128_err.txt
done
python3 -c "
import json
for l in open('$OUT/run128_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('mode'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', ''))"
el profile
env PYTHONPATH=$PWD timeout 120 python3 benchmarks/results/run128/infer_kernels.py $TMPDIR > $OUT/run128_kernels.txt 2>> $OUT/run128_err.txt
grep -A14 "^==" $OUT/run128_kernels.txt | cut -c1-40,90-
el tests
env PYTHONPATH=$PWD:/tmp/site timeout 200 python3 -m pytest -q -x tests/kernels/test_fitting.py \
  tests/kernels/test_descriptor.py tests/compress/test_kernels.py tests/gpu/test_infer.py > $OUT/run128_gpu_tests.txt 2>&1
tail -3 $OUT/run128_gpu_tests.txt
tail -5 $OUT/run128_err.txt
el done
