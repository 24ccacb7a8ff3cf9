#!/bin/bash
# Run 201: GraphedCall remembers the last box's image layers (nbuff_for on the host each call cost ~0.2 ms of
# torch's small-op overhead): the graph tests and run 200's probe again; copper DeepPot.eval calls of both trees
# (one type, the unsorted list). Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
PYTHONPATH=/tmp/site timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_infer.py \
  tests/infer/test_deep_pot.py 2>&1 | tail -2 | tee $OUT/run201_gpu_tests.txt
for round in 1 2; do
  PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 120 python3 benchmarks/results/run200/small_probe.py 2>&1 \
    | grep -v Warn | tee -a $OUT/run201_small_probe.txt
done
nvidia-smi --query-gpu=name --format=csv,noheader
ROOT=$PWD
for tree in . .old; do
  (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 80 python3 benchmarks/infer_bench.py \
     --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems copper --precisions float32 --sizes 98304 \
     --modes eval --repeat-seconds 0.8 2>&1 | grep '^{' | sed "s/^{/{\"tree\": \"$tree\", /" >> $OUT/run201_eval_copper.jsonl)
done
cut -c1-260 $OUT/run201_eval_copper.jsonl
