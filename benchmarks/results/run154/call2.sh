#!/bin/bash
# Run 154, second call (one H100): all GPU tests of the kernels, the inference path and compression; copper and the
# alloy, float32 and float64, list prebuilt, compressed too (the final tree); water at 192 and 12,288 atoms again
# (list prebuilt and graphed, 1 s of calls each: call 1's small non-graphed rows were slower than run 149's).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run154; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el gpu tests
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
timeout 330 env PYTHONPATH=$PWD:/tmp/site python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/kernels \
  tests/gpu tests/compress > $OUT/run154_gpu_tests.txt 2>&1
tail -3 $OUT/run154_gpu_tests.txt
el infer
A="--data .peer/data --inputs .peer/inputs"
timeout 200 env PYTHONPATH=$PWD python3 benchmarks/infer_bench.py $A --systems copper alloy \
  --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --compress --repeat-seconds 0.5 \
  >> $OUT/run154_infer2.jsonl 2>> $OUT/run154_err2.txt
timeout 100 env PYTHONPATH=$PWD python3 benchmarks/infer_bench.py $A --systems water --precisions float32 float64 \
  --sizes 192 12288 --modes prebuilt_nlist graphed --compress --repeat-seconds 1.0 \
  >> $OUT/run154_infer2.jsonl 2>> $OUT/run154_err2.txt
python3 -c "
import json
for l in open('$OUT/run154_infer2.jsonl'):
    r=json.loads(l); print(r.get('case'), r.get('path'), r.get('mode'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('e_per_atom'), r.get('error', '')[:100])"
tail -3 $OUT/run154_err2.txt
el done
