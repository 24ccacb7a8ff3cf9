#!/bin/bash
# Run 225: run 224's eval benchmark again without the tests before it (whose first process ran slow), one warm-up
# process first, then three rounds alternating trees and their order: this tree and 95cd098 (.old), water float32
# 192 to 98,304 atoms. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
ROOT=$PWD
T0=$(date +%s)
bench() {
  (cd $1 && PYTHONPATH=$PWD:$PWD/benchmarks timeout 100 python3 benchmarks/infer_bench.py \
     --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float32 \
     --sizes 192 1536 12288 98304 --modes eval --repeat-seconds 1.0 2>&1 | grep '^{' \
     | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" >> $OUT/run225_eval.jsonl)
  echo "== $1 round $2 $(( $(date +%s) - T0 )) s"
}
bench . 0
for round in 1 2 3; do
  if [ $round = 2 ]; then bench . $round; bench .old $round; else bench .old $round; bench . $round; fi
done
python3 -c "
import json, collections
rows = collections.defaultdict(list)
for l in open('$OUT/run225_eval.jsonl'):
    r = json.loads(l)
    if r['round']: rows[(r['case'], r['tree'])].append(r['ms_median'])
for (case, tree), v in sorted(rows.items()): print(case, tree, ' '.join(f'{x:.3f}' for x in v))
"
nvidia-smi --query-gpu=name --format=csv,noheader
