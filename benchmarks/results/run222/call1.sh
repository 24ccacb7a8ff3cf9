#!/bin/bash
# Run 222: the replayed call's inputs through pinned memory, copied only when they change; GPU tests of the graphs;
# call_steps.py (the host's steps of a call) on this tree and on 95cd098 (.old), alternating, water float32 192,
# 12,288 and 98,304 atoms. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_infer.py \
  tests/gpu/test_calculator_gpu.py 2>&1 | tail -3 | tee $OUT/run222_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
P=$ROOT/benchmarks/results/run222/call_steps.py
for round in 1 2; do
  for tree in . .old; do
    for reps in 8 4 1; do
      (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks timeout 60 python3 $P float32 $reps 2>&1 | grep atoms \
        | sed "s|^|$tree r$round |" | tee -a $OUT/run222_call_steps.txt)
    done
  done
  echo "== round $round $(( $(date +%s) - T0 )) s"
done
nvidia-smi --query-gpu=name --format=csv,noheader
