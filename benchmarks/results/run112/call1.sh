#!/bin/bash
# Run 112 (one H100): the GPU test that a default trainer takes the step kernels and trains like the references.
set -u
timeout 300 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/gpu/test_force_path_gpu.py \
  > $OUT/run112_gpu_tests.txt 2>&1; tail -3 $OUT/run112_gpu_tests.txt
