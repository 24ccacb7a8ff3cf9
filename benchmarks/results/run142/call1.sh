#!/bin/bash
# Run 142 (one H100): the alloy at 108,000 atoms, float64 compressed, 3 rounds alternating between this tree and the
# session's start (.old): run 140 had it 8% slower here while every other case was faster or the same.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run142; mkdir -p $TMPDIR
A="--data .peer/data --inputs .peer/inputs"
for tree in .old . .old . .old . ; do
  env PYTHONPATH=$PWD/$tree timeout 60 python3 $tree/benchmarks/infer_bench.py $A --systems alloy \
    --precisions float64 float32 --sizes 98304 --modes prebuilt_nlist --compress --repeat-seconds 0.5 \
    | grep compressed | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run142_infer.jsonl 2>> $OUT/run142_err.txt
done
python3 -c "
import json
for l in open('$OUT/run142_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('ms_per_call'), r.get('error', '')[-200:])"
tail -3 $OUT/run142_err.txt
