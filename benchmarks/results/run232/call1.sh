#!/bin/bash
# Run 232: the session's final tree against its start (18a255f, .old): GPU tests of inference and the calculator;
# infer_bench.py --modes eval, water float32 192 to 98,304 atoms, two rounds alternating trees and order, then
# float64 98,304 atoms, one round. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_infer.py \
  tests/gpu/test_calculator_gpu.py 2>&1 | tail -2 | tee $OUT/run232_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
bench() {
  (cd $1 && PYTHONPATH=$PWD:$PWD/benchmarks timeout 90 python3 benchmarks/infer_bench.py \
     --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions $3 \
     --sizes $4 --modes eval --repeat-seconds 1.0 2>&1 | grep '^{' \
     | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" >> $OUT/run232_eval.jsonl)
}
SIZES="192 1536 12288 98304"
bench . 0 float32 "192 12288"
bench .old 1 float32 "$SIZES"; bench . 1 float32 "$SIZES"; bench . 2 float32 "$SIZES"; bench .old 2 float32 "$SIZES"
echo "== float32 $(( $(date +%s) - T0 )) s"
bench . 1 float64 98304; bench .old 1 float64 98304
python3 -c "
import json, collections
rows = collections.defaultdict(list)
for l in open('$OUT/run232_eval.jsonl'):
    r = json.loads(l)
    if r['round']: rows[(r['case'], r['tree'])].append(f\"{r['ms_median']:.3f} ({r['atom_steps_per_s']:.2e})\")
for (case, tree), v in sorted(rows.items()): print(case, tree, ' '.join(v))
"
echo "== $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
