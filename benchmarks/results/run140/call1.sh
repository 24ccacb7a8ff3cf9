#!/bin/bash
# Run 140 (one H100): this session's inference (relaxed scatter atomics, float32 compressed T on 2 slots) against its
# start (0e25d68, .old): whole calls at ~100k atoms on prebuilt lists and graphed small systems, two rounds.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run140; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
A="--data .peer/data --inputs .peer/inputs"
el large
for tree in .old . . .old ; do
  env PYTHONPATH=$PWD/$tree timeout 110 python3 $tree/benchmarks/infer_bench.py $A --systems water copper alloy \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --compress --repeat-seconds 0.4 \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run140_infer.jsonl 2>> $OUT/run140_err.txt
done
el small
for tree in .old . ; do
  env PYTHONPATH=$PWD/$tree timeout 60 python3 $tree/benchmarks/infer_bench.py $A --systems water copper \
    --precisions float32 float64 --sizes 192 --modes graphed --compress --repeat-seconds 0.3 \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run140_infer.jsonl 2>> $OUT/run140_err.txt
done
python3 -c "
import json
for l in open('$OUT/run140_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('mode'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', '')[-200:])"
tail -5 $OUT/run140_err.txt
el done
