#!/bin/bash
# Run 265 call 3 (one GPU, ~5 minutes; carry .whl with ASE's wheel): the GPU tests of this tree, the first since run
# 260 (sessions 26-29 changed DeepPot's queries, deeppot test, eval-desc and embed, and landed fitting_stack):
# tests/gpu whole, then tests/evaluate and tests/infer/test_eval_descriptor.py, whose commands now default to CUDA.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
el gpu
PYTHONPATH=/tmp/site:$PWD:$PWD/tests timeout 280 python3 -m pytest -q -rfEs -p no:cacheprovider tests/gpu \
  > $OUT/run265_gpu_tests3.txt 2>&1
tail -4 $OUT/run265_gpu_tests3.txt
el evaluate
PYTHONPATH=/tmp/site:$PWD:$PWD/tests timeout 200 python3 -m pytest -q -rfEs -p no:cacheprovider tests/evaluate \
  tests/infer/test_eval_descriptor.py > $OUT/run265_evaluate_tests3.txt 2>&1
tail -4 $OUT/run265_evaluate_tests3.txt
el done
