#!/bin/bash
# Run 231: fit_tiles.py (the fitting products on wider tiles); the host's steps of a 98,304-atom call under
# cProfile (host_profile.py: where the call's time outside the replay goes). Carry [".peer"].
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD:$PWD/benchmarks timeout 200 python3 benchmarks/results/run231/fit_tiles.py 2>&1 | grep '^{' \
  | tee $OUT/run231_fit_tiles.jsonl
PYTHONPATH=$PWD:$PWD/benchmarks timeout 100 python3 benchmarks/results/run231/host_profile.py 2>&1 \
  | tee $OUT/run231_host_profile.txt
nvidia-smi --query-gpu=name --format=csv,noheader
