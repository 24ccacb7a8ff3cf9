#!/bin/bash
# Run 233: run 232's comparison again where it was unclear: water float32 1,536 and 12,288 atoms, three more rounds
# alternating trees and order; float64 98,304 atoms, one more round each, old tree first. Carry [".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
ROOT=$PWD
T0=$(date +%s)
bench() {
  (cd $1 && PYTHONPATH=$PWD:$PWD/benchmarks timeout 90 python3 benchmarks/infer_bench.py \
     --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions $3 \
     --sizes $4 --modes eval --repeat-seconds 1.0 2>&1 | grep '^{' \
     | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" >> $OUT/run233_eval.jsonl)
}
bench . 0 float32 1536
for r in 1 2 3; do
  if [ $((r % 2)) -eq 1 ]; then bench . $r float32 "1536 12288"; bench .old $r float32 "1536 12288";
  else bench .old $r float32 "1536 12288"; bench . $r float32 "1536 12288"; fi
done
bench .old 1 float64 98304; bench . 1 float64 98304
python3 -c "
import json, collections
rows = collections.defaultdict(list)
for l in open('$OUT/run233_eval.jsonl'):
    r = json.loads(l)
    if r['round']: rows[(r['case'], r['tree'])].append(f\"{r['ms_median']:.3f}/{r['ms_min']:.3f}\")
for (case, tree), v in sorted(rows.items()): print(case, tree, 'median/min:', ' '.join(v))
"
echo "== $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
