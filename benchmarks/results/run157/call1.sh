#!/bin/bash
# Run 157 (one H100): the compressed kernels' rows stored in groups of 32 slots (coalesced stores; only the slots a
# kernel visits), this tree against 14b52fd (.old): GPU tests, whole calls, kernel profiles of both trees, tiles.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run157; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=benchmarks/results/run156
el gpu tests
timeout 120 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/compress/test_kernels.py \
  tests/gpu/test_infer.py > $OUT/run157_gpu_tests.txt 2>&1
tail -3 $OUT/run157_gpu_tests.txt
el kernel profiles
for tree in . .old; do
  echo "## tree $tree" >> $OUT/run157_kernels.txt
  timeout 80 env PYTHONPATH=$PWD/$tree python3 $R/infer_kernels.py $TMPDIR >> $OUT/run157_kernels.txt 2>> $OUT/run157_err.txt
done
cat $OUT/run157_kernels.txt
el infer
A="--data .peer/data --inputs .peer/inputs"
for tree in . .old . .old; do
  timeout 95 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water copper \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 --compress \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run157_infer.jsonl 2>> $OUT/run157_err.txt
done
python3 -c "
import json
for l in open('$OUT/run157_infer.jsonl'):
    r=json.loads(l)
    if 'compressed' in r.get('case', ''): print(r.get('tree'), r.get('case'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', ''))"
el tiles
timeout 150 env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/compress_tiles.py $A \
  --tiles 1,2,1 1,4,1 1,8,1 2,2,1 2,4,1 1,8,2 > $OUT/run157_tiles.jsonl 2>> $OUT/run157_err.txt
cut -c1-330 $OUT/run157_tiles.jsonl
tail -5 $OUT/run157_err.txt
el done
