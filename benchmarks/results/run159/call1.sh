#!/bin/bash
# Run 159: the compressed kernels' tiles again with their rows from _rows_kernel, for fresh models (infer_bench's)
# and models with the frame's statistics; GPU tests of tests/gpu and tests/compress on this tree.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run159; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
A="--data .peer/data --inputs .peer/inputs"
el tiles
for stats in --fresh ""; do
  timeout 110 env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/compress_tiles.py $A $stats \
    --tiles 1,2,1 1,4,1 2,2,1 1,2,1 >> $OUT/run159_tiles.jsonl 2>> $OUT/run159_err.txt
done
python3 -c "
import json
for l in open('$OUT/run159_tiles.jsonl'):
    r=json.loads(l); print(r['case'], r['statistics'], r['tile'], *(round(r[k], 3) for k in ('t_ms_reach', 'grad_ms_reach', 'ms_per_step')))"
el gpu tests
timeout 330 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/gpu tests/compress \
  > $OUT/run159_gpu_tests.txt 2>&1
tail -3 $OUT/run159_gpu_tests.txt
tail -5 $OUT/run159_err.txt
el done
