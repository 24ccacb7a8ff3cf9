#!/bin/bash
# Run 234: compressed water float32 calls (issue 10's case) on this tree and 18a255f (.old): infer_bench.py --modes
# eval --compress, 12,288 and 98,304 atoms, two rounds alternating trees and order. Carry [".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
ROOT=$PWD
T0=$(date +%s)
bench() {
  (cd $1 && PYTHONPATH=$PWD:$PWD/benchmarks timeout 150 python3 benchmarks/infer_bench.py \
     --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float32 \
     --sizes 12288 98304 --modes eval --compress --repeat-seconds 1.0 2>&1 | grep '^{' \
     | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" >> $OUT/run234_eval.jsonl)
}
bench . 1; bench .old 1; bench .old 2; bench . 2
python3 -c "
import json, collections
rows = collections.defaultdict(list)
for l in open('$OUT/run234_eval.jsonl'):
    r = json.loads(l)
    rows[(r['case'], r['tree'])].append(f\"{r['ms_median']:.3f}/{r['ms_min']:.3f}\")
for (case, tree), v in sorted(rows.items()): print(case, tree, 'median/min:', ' '.join(v))
"
echo "== $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
