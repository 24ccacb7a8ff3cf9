#!/bin/bash
# Run 207: a small call's list as every image in index order (`select_all_pairs`, one Triton kernel) instead of
# DeePMD's top-k and sorts: the GPU tests of the list, the kernels and inference; small_probe.py on this tree and
# on 2b95068 (.old), alternating. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 300 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_selection.py \
  tests/gpu/test_infer.py tests/infer tests/nlist 2>&1 | tail -6 | tee $OUT/run207_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
P=benchmarks/results/run207/small_probe.py
for round in 1 2; do
  PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 90 python3 $P new $([ $round = 1 ] && echo --profile) 2>&1 | grep -v Warn | tee -a $OUT/run207_small_probe.txt
  (cd .old && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 90 python3 ../$P old 2>&1 | grep -v Warn | tee -a $OUT/run207_small_probe.txt)
done
echo "== total $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
