#!/bin/bash
# Run 154 (one H100): the README's inference table with the branch-free tanh and float64's new tiles (water, fresh
# models, one process as run 149): float32 at 192, 12,288, 98,304 and ~1e6 atoms (eval, list prebuilt, graphed),
# compressed too; float64 list prebuilt at 12,288 and 98,304, compressed too.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run154; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
A="--data .peer/data --inputs .peer/inputs"
el float32
timeout 330 env PYTHONPATH=$PWD python3 benchmarks/infer_bench.py $A --systems water --precisions float32 \
  --sizes 192 12288 98304 1000000 --modes eval prebuilt_nlist graphed --compress --repeat-seconds 0.5 \
  >> $OUT/run154_infer.jsonl 2>> $OUT/run154_err.txt
el float64
timeout 150 env PYTHONPATH=$PWD python3 benchmarks/infer_bench.py $A --systems water --precisions float64 \
  --sizes 12288 98304 --modes prebuilt_nlist --compress --repeat-seconds 0.5 \
  >> $OUT/run154_infer.jsonl 2>> $OUT/run154_err.txt
python3 -c "
import json
for l in open('$OUT/run154_infer.jsonl'):
    r=json.loads(l); print(r.get('case'), r.get('path'), r.get('mode'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('error', '')[:100])"
tail -3 $OUT/run154_err.txt
el done
