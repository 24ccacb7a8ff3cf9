#!/bin/bash
# Run 226: the replayed call's box inverse kept from call to call and its own kept inputs compared by identity
# (after run 225 found small calls ~0.1 ms slower); GPU tests of inference; run 225's alternating eval benchmark
# (one warm-up process, two rounds) on this tree and 95cd098 (.old). Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_infer.py 2>&1 | tail -2 \
  | tee $OUT/run226_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
bench() {
  (cd $1 && PYTHONPATH=$PWD:$PWD/benchmarks timeout 100 python3 benchmarks/infer_bench.py \
     --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float32 \
     --sizes 192 1536 12288 98304 --modes eval --repeat-seconds 1.0 2>&1 | grep '^{' \
     | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" >> $OUT/run226_eval.jsonl)
  echo "== $1 round $2 $(( $(date +%s) - T0 )) s"
}
bench . 0
bench .old 1; bench . 1; bench . 2; bench .old 2
python3 -c "
import json, collections
rows = collections.defaultdict(list)
for l in open('$OUT/run226_eval.jsonl'):
    r = json.loads(l)
    if r['round']: rows[(r['case'], r['tree'])].append(r['ms_median'])
for (case, tree), v in sorted(rows.items()): print(case, tree, ' '.join(f'{x:.3f}' for x in v))
"
nvidia-smi --query-gpu=name --format=csv,noheader
