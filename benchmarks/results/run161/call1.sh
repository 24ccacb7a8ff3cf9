#!/bin/bash
# Run 161: run 160's whole calls again with the chunk estimate as before (run 160's larger estimate split the
# 98,304-atom water system into two chunks), water only, this tree against 14b52fd (.old), three rounds.
set -u
export PYTHONUNBUFFERED=1
A="--data .peer/data --inputs .peer/inputs"
for tree in . .old . .old . .old; do
  timeout 40 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 --compress \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run161_infer.jsonl 2>> $OUT/run161_err.txt
done
python3 -c "
import json
for l in open('$OUT/run161_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', ''))"
tail -3 $OUT/run161_err.txt
