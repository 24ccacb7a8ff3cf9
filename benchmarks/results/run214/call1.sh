#!/bin/bash
# Run 214: one periodic frame of up to 32,768 atoms replays its whole call from a graph, with the cell list of static
# sizes (`deeppot.infer.static_cells`): GPU tests; run 213's stage_calls.py (5,184, 12,288, 24,000 water atoms,
# graphed and eager) on this tree and on 2b95068 (.old), alternating. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_infer.py \
  tests/infer tests/kernels/test_cell_pairs.py tests/gpu/test_calculator_gpu.py 2>&1 \
  | tail -4 | tee $OUT/run214_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
P=$ROOT/benchmarks/results/run213/stage_calls.py
for round in 1 2; do
  for tree in . .old; do
    (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 120 python3 $P $tree 3 4 5 2>&1 | grep atoms \
       | tee -a $OUT/run214_stage_calls.txt)
    echo "== $tree round $round $(( $(date +%s) - T0 )) s"
  done
done
nvidia-smi --query-gpu=name --format=csv,noheader
