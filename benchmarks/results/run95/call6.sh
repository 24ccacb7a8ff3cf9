#!/bin/bash
# Run 101 (one H100): the GPU tests after the review (FlatAdam's table state derived; GraphedEvaluation through
# Evaluator.evaluate_neighbors; test_md_gpu.py needs ASE, which this machine lacks).
set -u
timeout 300 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/kernels/test_adam.py \
  tests/gpu/test_graph_step.py tests/gpu/test_infer.py > $OUT/run101_gpu_tests.txt 2>&1
tail -4 $OUT/run101_gpu_tests.txt
