#!/bin/bash
# Session 23, call 5 (H100): run 51, the gradient kernel's row sums as one joint reduction (call5_grad.py).
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
timeout 300 python3 benchmarks/results/run47_50/call5_grad.py | tee $OUT/run51_grad_joint.jsonl
