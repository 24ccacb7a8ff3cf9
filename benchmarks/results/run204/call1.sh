#!/bin/bash
# Run 204: build_candidates in one chunk where the pair kernel runs (no split of the candidate pairs, one host sync
# fewer) against fff1d31 (.old): the list and kernel GPU tests, the list probe, whole DeepPot.eval calls
# alternating. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
PYTHONPATH=/tmp/site timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_cell_pairs.py \
  tests/infer/test_neighbors.py tests/gpu/test_md_gpu.py 2>&1 | tail -2 | tee $OUT/run204_gpu_tests.txt
for tree in . .old; do
  PYTHONPATH=$ROOT/$tree:$ROOT/$tree/benchmarks:/tmp/site timeout 100 python3 benchmarks/results/run198/list_probe.py 4 8 \
    2>&1 | grep -v Warn | sed "s/^/$tree /" | tee -a $OUT/run204_list_probe.txt
done
for round in 1 2; do
  for tree in . .old; do
    (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 60 python3 benchmarks/infer_bench.py \
       --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float32 --sizes 12288 98304 \
       --modes eval --repeat-seconds 0.8 2>&1 | grep '^{' | sed "s/^{/{\"tree\": \"$tree\", \"round\": $round, /" >> $OUT/run204_eval.jsonl)
  done
done
python3 -c "
import json
for l in open('$OUT/run204_eval.jsonl'):
    d = json.loads(l); print(d['tree'], d['round'], d['case'], d['ms_median'], d['ms_min'], d.get('e_per_atom'))"
nvidia-smi --query-gpu=name --format=csv,noheader
