#!/bin/bash
# Run 238: the f16x3 embedding products chained in units of 2^-11 (`embedding._mm_parts`): parts_probe.py on .old
# (a6179df), .mid (chained in both kernels) and this tree (chained in T only), outputs compared; whole calls of
# water and copper float32 (--modes eval), this tree against .old, two rounds; GPU tests of this tree.
# Carry [".peer", ".old", ".mid", ".whl"].
set -u
export PYTHONUNBUFFERED=1
ROOT=$PWD
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
probe() {
  (cd $1 && PYTHONPATH=$PWD:$PWD/benchmarks timeout 100 python3 $ROOT/benchmarks/results/run238/parts_probe.py $2 \
     2>&1 | grep -v Warn | tee -a $OUT/run238_probe.jsonl)
}
probe .old old; probe .mid mid; probe . new
echo "== probe $(( $(date +%s) - T0 )) s"
bench() {
  (cd $1 && PYTHONPATH=$PWD:$PWD/benchmarks timeout 90 python3 benchmarks/infer_bench.py \
     --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water copper --precisions float32 \
     --sizes 98304 --modes eval --repeat-seconds 1.0 2>&1 | grep '^{' \
     | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" >> $OUT/run238_eval.jsonl)
}
bench . 1; bench .old 1; bench .old 2; bench . 2
python3 -c "
import json, collections
rows = collections.defaultdict(list)
for l in open('$OUT/run238_eval.jsonl'):
    r = json.loads(l)
    rows[(r['case'], r['tree'])].append(f\"{r['ms_median']:.3f} ({r['atom_steps_per_s']:.2e})\")
for (case, tree), v in sorted(rows.items()): print(case, tree, ' '.join(v))
"
echo "== bench $(( $(date +%s) - T0 )) s"
PYTHONPATH=$PWD:/tmp/site timeout 240 python3 -m pytest -q -x -p no:cacheprovider -rf tests/kernels/test_descriptor.py \
  tests/kernels/test_precision.py tests/gpu/test_infer.py 2>&1 | tail -3 | tee $OUT/run238_gpu_tests.txt
echo "== $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
