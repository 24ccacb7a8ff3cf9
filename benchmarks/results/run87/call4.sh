#!/bin/bash
# Run 90 (one H100): GPU tests with the float64 atom tiles (T 2 x 16 x 8 warps, stacked gradient 1 x 16); infer_bench
# at 98,304 atoms for this tree and 1bcf522 (.old) in the same call, float64 and float32.
set -u
export PYTHONUNBUFFERED=1
timeout 240 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/kernels/test_descriptor.py tests/gpu/test_infer.py tests/gpu/test_ensemble_gpu.py \
  > $OUT/run90_gpu_tests.txt 2>&1; tail -3 $OUT/run90_gpu_tests.txt
for tree in . .old; do
  env PYTHONPATH=$PWD/$tree timeout 150 python3 $tree/benchmarks/infer_bench.py --systems water copper alloy \
    --precisions float64 float32 --sizes 98304 --modes prebuilt_nlist --data .peer/data \
    --inputs .peer/inputs 2>>$OUT/run90_err.txt | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run90_infer.jsonl
done
python3 -c "
import json
for l in open('$OUT/run90_infer.jsonl'):
    r=json.loads(l); print(r['tree'], r['case'], r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('error','')[:200])"
env PYTHONPATH=$PWD timeout 100 python3 benchmarks/infer_bench.py --systems water --precisions float64 \
  --sizes 192 12288 --modes prebuilt_nlist --data .peer/data --inputs .peer/inputs 2>>$OUT/run90_err.txt \
  | tee -a $OUT/run90_sizes.jsonl | cut -c1-250
