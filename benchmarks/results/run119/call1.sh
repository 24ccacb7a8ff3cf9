#!/bin/bash
# Run 119 (one H100): what the training embedding backward kernel spends its time on (bwd_variants.py), and
# graphed inference of small water and copper systems with the split fitting products (this tree, 557f6df) against
# e2ae2f7 (.old).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run119; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el variants
for p in float32 float64; do
  timeout 200 env PYTHONPATH=$PWD python3 benchmarks/results/run119/bwd_variants.py --precision $p \
    >> $OUT/run119_variants.jsonl 2>> $OUT/run119_err.txt
done
cat $OUT/run119_variants.jsonl
el infer
for rep in 1 2; do for tree in .old .; do
  env PYTHONPATH=$PWD/$tree timeout 100 python3 $tree/benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
    --sizes 192 1536 --precisions float32 --systems water copper --modes graphed --repeat-seconds 0.5 \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run119_infer.jsonl 2>> $OUT/run119_err.txt
done; done
python3 -c "
import json
for l in open('$OUT/run119_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('mode'), r.get('ms_per_call'), r.get('e_per_atom'))"
el done
