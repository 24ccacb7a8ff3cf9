#!/bin/bash
# Run 236: the f16x3 atom-tile kernels reading W2's and W3's float16 parts made once (this tree) against splitting
# them in every chunk (.old = 64634b1): parts_probe.py on each tree (kernels alone, tiles, outputs compared), then
# infer_bench.py --modes eval, water float32 12,288 and 98,304 atoms, two rounds alternating trees and order.
# Carry [".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
ROOT=$PWD
T0=$(date +%s)
probe() {
  (cd $1 && PYTHONPATH=$PWD:$PWD/benchmarks timeout 120 python3 $ROOT/benchmarks/results/run236/parts_probe.py $2 \
     2>&1 | grep -v Warn | tee -a $OUT/run236_probe.jsonl)
}
probe .old old; probe . new
echo "== probe $(( $(date +%s) - T0 )) s"
bench() {
  (cd $1 && PYTHONPATH=$PWD:$PWD/benchmarks timeout 90 python3 benchmarks/infer_bench.py \
     --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float32 \
     --sizes 12288 98304 --modes eval --repeat-seconds 1.0 2>&1 | grep '^{' \
     | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" >> $OUT/run236_eval.jsonl)
}
bench . 1; bench .old 1; bench .old 2; bench . 2
python3 -c "
import json, collections
rows = collections.defaultdict(list)
for l in open('$OUT/run236_eval.jsonl'):
    r = json.loads(l)
    rows[(r['case'], r['tree'])].append(f\"{r['ms_median']:.3f} ({r['atom_steps_per_s']:.2e})\")
for (case, tree), v in sorted(rows.items()): print(case, tree, ' '.join(v))
"
echo "== $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
