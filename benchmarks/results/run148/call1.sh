#!/bin/bash
# Run 148 (one H100): the uncompressed gradient kernel's row sums as four (the compressed kernels' _tile_row_grad)
# with f16x3, and two T contraction variants (variants.py), this tree against HEAD fb9cf91 (.old); whole float32
# calls of both trees, alternating.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run148; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
A="--data .peer/data --inputs .peer/inputs"
el variants
for tree in .old . .old; do
  V="f16x3"; [ "$tree" = "." ] && V="f16x3 f16x3w f16x3g"
  timeout 150 env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks python3 benchmarks/results/run148/variants.py $tree $V \
    >> $OUT/run148_variants.jsonl 2>> $OUT/run148_err.txt
done
cat $OUT/run148_variants.jsonl
el infer
for tree in . .old . .old; do
  timeout 100 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water copper alloy \
    --precisions float32 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run148_infer.jsonl 2>> $OUT/run148_err.txt
done
python3 -c "
import json
for l in open('$OUT/run148_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('path'), r.get('ms_per_call'), r.get('e_per_atom'), r.get('error', ''))"
tail -3 $OUT/run148_err.txt
el done
