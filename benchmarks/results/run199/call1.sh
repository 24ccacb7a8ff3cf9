#!/bin/bash
# Run 199: the final tree of this change (type rows sized on the host, the candidate-order list only where a
# model's slots are interchangeable) on a GPU: its tests, the sync probe, whole DeepPot.eval calls against b6a02ab
# (.old) alternating, and MD (md_bench, 98,304 atoms eager) once each. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_infer.py tests/infer \
  tests/gpu/test_md_gpu.py tests/gpu/test_ensemble_gpu.py tests/gpu/test_tools_gpu.py tests/gpu/test_calculator_gpu.py \
  2>&1 | tail -3 | tee $OUT/run199_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 60 python3 benchmarks/results/run198/sync_probe.py $OUT float32 8 \
  2>&1 | grep -v Warning | tee $OUT/run199_sync_float32_8.txt
for round in 1 2 3; do
  for tree in . .old; do
    (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 60 python3 benchmarks/infer_bench.py \
       --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float32 --sizes 192 12288 98304 \
       --modes eval --repeat-seconds 0.8 2>&1 | grep '^{' | sed "s/^{/{\"tree\": \"$tree\", \"round\": $round, /" >> $OUT/run199_eval.jsonl)
    echo "== $tree round $round $(( $(date +%s) - T0 )) s"
  done
done
for tree in . .old; do
  (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 80 python3 benchmarks/md_bench.py \
     --sizes 98304 --dtype float32 --steps 60 --warmup 10 2>&1 | grep '^{' \
     | sed "s/^{/{\"tree\": \"$tree\", /" >> $OUT/run199_md.jsonl)
  echo "== md $tree $(( $(date +%s) - T0 )) s"
done
python3 -c "
import json
for l in open('$OUT/run199_eval.jsonl'):
    d = json.loads(l); print(d['tree'], d['round'], d['case'], d['ms_median'], d['ms_min'], d.get('e_per_atom'))"
cut -c1-330 $OUT/run199_md.jsonl
nvidia-smi --query-gpu=name --format=csv,noheader
