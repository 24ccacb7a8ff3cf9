#!/bin/bash
# Run 224: the session's final tree against 95cd098 (.old), whole DeepPot.eval calls (infer_bench --modes eval, one
# DeepPot a case, repeated calls: graphed where a graph serves), water float32 192 to 1,119,744 atoms and float64
# 98,304; trees alternating. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 170 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_infer.py \
  tests/kernels/test_fitting.py 2>&1 | tail -2 | tee $OUT/run224_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
for tree in . .old; do
  (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 150 python3 benchmarks/infer_bench.py \
     --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float32 \
     --sizes 192 1536 12288 98304 1000000 --modes eval --repeat-seconds 1.0 2>&1 | grep '^{' \
     | sed "s/^{/{\"tree\": \"$tree\", /" >> $OUT/run224_eval.jsonl)
  (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 60 python3 benchmarks/infer_bench.py \
     --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float64 --sizes 98304 \
     --modes eval --repeat-seconds 1.0 2>&1 | grep '^{' | sed "s/^{/{\"tree\": \"$tree\", /" >> $OUT/run224_eval.jsonl)
  echo "== $tree $(( $(date +%s) - T0 )) s"
done
python3 -c "
import json
for l in open('$OUT/run224_eval.jsonl'):
    r = json.loads(l); print(r['tree'], r['case'], r.get('ms_median'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'))
"
nvidia-smi --query-gpu=name --format=csv,noheader
