#!/bin/bash
# Run 251 call 7 (one GPU): the review commit 554eda4 (the held-weights branch as two shared helpers): the descriptor
# kernels' tests.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=$PWD timeout 280 python3 -m pytest -q tests/kernels/test_descriptor.py 2>&1 | tail -2 | tee $OUT/run251_tests7.txt
