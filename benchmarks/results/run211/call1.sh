#!/bin/bash
# Run 211: whole calls of up to 4,096 atoms and 1e8 centre-image pairs replayed from a CUDA graph (the list as the
# walk of every image): GPU tests; mid_probe.py (192 and 1,536 water atoms, graphed and eager) on this tree and on
# 2b95068 (.old), alternating. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_infer.py \
  tests/infer/test_deep_pot.py tests/gpu/test_calculator_gpu.py tests/gpu/test_ensemble_gpu.py 2>&1 \
  | tail -4 | tee $OUT/run211_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
P=$ROOT/benchmarks/results/run211/mid_probe.py
for round in 1 2; do
  for tree in . .old; do
    (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 100 python3 $P $tree 2>&1 | grep atoms \
       | tee -a $OUT/run211_mid_probe.txt)
    echo "== $tree round $round $(( $(date +%s) - T0 )) s"
  done
done
nvidia-smi --query-gpu=name --format=csv,noheader
