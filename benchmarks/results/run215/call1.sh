#!/bin/bash
# Run 215: the whole call of one periodic frame of up to 131,072 atoms from a graph, each fitting net on its own
# type's atoms from 1,024 atoms on: GPU tests; run 213's stage_calls.py (12,288 and 98,304 water atoms) and
# infer_bench (98,304, float32, peak memory) on this tree and on 2b95068 (.old), alternating.
# Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_infer.py \
  tests/infer/test_deep_pot.py tests/infer/test_static_cells.py tests/gpu/test_calculator_gpu.py 2>&1 \
  | tail -4 | tee $OUT/run215_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
P=$ROOT/benchmarks/results/run213/stage_calls.py
for round in 1 2; do
  for tree in . .old; do
    (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 100 python3 $P $tree 4 8 2>&1 | grep atoms \
       | tee -a $OUT/run215_stage_calls.txt)
    echo "== $tree round $round $(( $(date +%s) - T0 )) s"
  done
done
for tree in . .old; do
  (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 60 python3 benchmarks/infer_bench.py \
     --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float32 --sizes 98304 \
     --modes eval --repeat-seconds 1.0 2>&1 | grep '^{' | sed "s/^{/{\"tree\": \"$tree\", /" | tee -a $OUT/run215_eval.jsonl)
done
nvidia-smi --query-gpu=name --format=csv,noheader
