#!/bin/bash
# Run 156 (one H100): the compressed kernels' per-row work done once, one slot a lane (_rows_kernel, _back_kernel),
# and their tables by power (this tree) against 14b52fd (.old): GPU tests, whole calls, a kernel profile.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run156; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=benchmarks/results/run156
el gpu tests
timeout 120 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/compress/test_kernels.py \
  tests/gpu/test_infer.py > $OUT/run156_gpu_tests.txt 2>&1
tail -3 $OUT/run156_gpu_tests.txt
el infer
A="--data .peer/data --inputs .peer/inputs"
for tree in . .old . .old; do
  timeout 95 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water copper \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 --compress \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run156_infer.jsonl 2>> $OUT/run156_err.txt
done
python3 -c "
import json
for l in open('$OUT/run156_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', ''))"
el kernel profile
timeout 80 env PYTHONPATH=$PWD python3 $R/infer_kernels.py $TMPDIR > $OUT/run156_kernels.txt 2>> $OUT/run156_err.txt
cat $OUT/run156_kernels.txt
tail -5 $OUT/run156_err.txt
el done
