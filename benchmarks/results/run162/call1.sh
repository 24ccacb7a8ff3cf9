#!/bin/bash
# Run 162 (prepared in stop 40, not yet run): the compressed kernels' G and G' as sums of per-row power weights times
# the coefficients (power_weights.patch: one FMA a coefficient and column instead of two Horner schemes; SASS on the
# CPU: float32 T loop 264 -> 222 instructions, float64 T 630 -> 528 but 64 B spilled, gradients -3%), the patched
# tree (/tmp/pw) against this one: interpreter-free GPU tests of the kernels, a kernel profile, whole calls.
# Run from the repository root with carry [".peer"]; the device's own torch and Triton.
set -u
export PYTHONUNBUFFERED=1
R=benchmarks/results/run162
rm -rf /tmp/pw && mkdir -p /tmp/pw && git archive HEAD deeppot benchmarks tests examples | tar -x -C /tmp/pw
(cd /tmp/pw && patch -p1 < $PWD/$R/power_weights.patch) || exit 1
timeout 120 env PYTHONPATH=/tmp/pw python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  /tmp/pw/tests/compress/test_kernels.py > $OUT/run162_gpu_tests.txt 2>&1
tail -2 $OUT/run162_gpu_tests.txt
for tree in $PWD /tmp/pw; do
  echo "## tree $tree" >> $OUT/run162_kernels.txt
  timeout 80 env PYTHONPATH=$tree python3 benchmarks/results/run156/infer_kernels.py /tmp >> $OUT/run162_kernels.txt 2>&1
done
grep -E "^##|^==|_compressed_|_rows_|_back_" $OUT/run162_kernels.txt
A="--data .peer/data --inputs .peer/inputs"
for tree in $PWD /tmp/pw $PWD /tmp/pw $PWD /tmp/pw; do
  timeout 40 env PYTHONPATH=$tree python3 $tree/benchmarks/infer_bench.py $A --systems water --precisions float32 \
    float64 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 --compress \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run162_infer.jsonl 2>> $OUT/run162_err.txt
done
python3 -c "
import json
for l in open('$OUT/run162_infer.jsonl'):
    r=json.loads(l)
    if 'compressed' in r.get('case', ''): print(r['tree'], r['case'], r.get('ms_per_call'), r.get('e_per_atom'))"
