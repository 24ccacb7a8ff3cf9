#!/bin/bash
# Run 160: the final tree of the compressed kernels' rows change (tiles of run 159) against 14b52fd (.old): whole
# calls of compressed models, three rounds alternating; water at 1,119,744 atoms for memory; tests/gpu and
# tests/compress.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run160; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
el infer
A="--data .peer/data --inputs .peer/inputs"
for tree in . .old . .old . .old; do
  timeout 80 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water copper \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 --compress \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run160_infer.jsonl 2>> $OUT/run160_err.txt
done
el large
timeout 100 env PYTHONPATH=$PWD python3 benchmarks/infer_bench.py $A --systems water --precisions float32 \
  --sizes 1000000 --modes prebuilt_nlist --repeat-seconds 0.5 --compress \
  | sed "s#^{#{\"tree\": \".\", #" >> $OUT/run160_infer.jsonl 2>> $OUT/run160_err.txt
python3 -c "
import json
for l in open('$OUT/run160_infer.jsonl'):
    r=json.loads(l)
    if 'compressed' in r.get('case', ''): print(r.get('tree'), r.get('case'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', ''))"
el gpu tests
timeout 300 env PYTHONPATH=$PWD:/tmp/site python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/gpu \
  tests/compress > $OUT/run160_gpu_tests.txt 2>&1
tail -4 $OUT/run160_gpu_tests.txt
tail -5 $OUT/run160_err.txt
el done
