#!/bin/bash
# Run 200: whole small-system DeepPot.eval calls replayed from a CUDA graph (GraphedCall): the GPU tests of
# inference, the graph against the eager call in one process (small_probe.py), and whole calls of both trees
# (infer_bench --modes eval, 192 and 12,288 atoms) alternating. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_infer.py tests/infer \
  tests/gpu/test_calculator_gpu.py tests/nlist 2>&1 | tail -4 | tee $OUT/run200_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 120 python3 benchmarks/results/run200/small_probe.py 2>&1 \
  | grep -v Warn | tee $OUT/run200_small_probe.txt
echo "== probe $(( $(date +%s) - T0 )) s"
for round in 1 2; do
  for tree in . .old; do
    (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 60 python3 benchmarks/infer_bench.py \
       --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float32 float64 --sizes 192 12288 \
       --modes eval --repeat-seconds 0.8 2>&1 | grep '^{' | sed "s/^{/{\"tree\": \"$tree\", \"round\": $round, /" >> $OUT/run200_eval.jsonl)
    echo "== $tree round $round $(( $(date +%s) - T0 )) s"
  done
done
python3 -c "
import json
for l in open('$OUT/run200_eval.jsonl'):
    d = json.loads(l); print(d['tree'], d['round'], d['case'], d['ms_median'], d['ms_min'], d.get('e_per_atom'))"
nvidia-smi --query-gpu=name --format=csv,noheader
