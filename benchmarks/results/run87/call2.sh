#!/bin/bash
# Run 88 (one H100): GPU tests of the inference path; the fitting layers' GEMMs with their biases and skips in the
# epilogue: stage times and infer_bench at 98,304 atoms for this tree and e5c6e4e (.old) in the same call.
set -u
export PYTHONUNBUFFERED=1
timeout 240 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/kernels/test_descriptor.py tests/kernels/test_descriptor_matrix.py tests/compress/test_kernels.py \
  tests/gpu/test_infer.py > $OUT/run88_gpu_tests.txt 2>&1; tail -4 $OUT/run88_gpu_tests.txt
for tree in . .old; do
  env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks timeout 120 python3 benchmarks/results/run83/stages.py \
    $OUT/run88_stages_$([ $tree = . ] && echo new || echo old).jsonl water:float32 water:float32:compressed \
    2>&1 | grep -v Warn | cut -c1-400
done
for tree in . .old; do
  env PYTHONPATH=$PWD/$tree timeout 200 python3 $tree/benchmarks/infer_bench.py --systems water copper alloy \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --compress --data .peer/data \
    --inputs .peer/inputs 2>>$OUT/run88_err.txt | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run88_infer.jsonl
  grep "\"$tree\"" $OUT/run88_infer.jsonl | python3 -c "
import json,sys
for l in sys.stdin:
    r=json.loads(l); print(r['tree'], r['case'], r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('error',''))"
done
