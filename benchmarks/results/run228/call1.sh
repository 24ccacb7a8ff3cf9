#!/bin/bash
# Run 228: one periodic frame from 1,024 atoms captured with the cell list (run 227); GPU tests of inference; the
# eval benchmark (192 to 12,288 water atoms, float32) on this tree and 95cd098 (.old), two rounds alternating.
# Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_infer.py 2>&1 | tail -2 \
  | tee $OUT/run228_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
bench() {
  (cd $1 && PYTHONPATH=$PWD:$PWD/benchmarks timeout 60 python3 benchmarks/infer_bench.py \
     --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float32 \
     --sizes 192 1536 12288 --modes eval --repeat-seconds 1.0 2>&1 | grep '^{' \
     | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" >> $OUT/run228_eval.jsonl)
}
bench . 0
bench .old 1; bench . 1; bench . 2; bench .old 2
python3 -c "
import json, collections
rows = collections.defaultdict(list)
for l in open('$OUT/run228_eval.jsonl'):
    r = json.loads(l)
    if r['round']: rows[(r['case'], r['tree'])].append(r['ms_median'])
for (case, tree), v in sorted(rows.items()): print(case, tree, ' '.join(f'{x:.3f}' for x in v))
"
nvidia-smi --query-gpu=name --format=csv,noheader
