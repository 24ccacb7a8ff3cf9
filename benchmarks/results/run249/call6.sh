#!/bin/bash
# Run 249 call 6 (one GPU): the copy of DeepPot.eval's outputs back to the host, by variant, in whole calls
# (copy_out_probe.py; trained water and copper models, ~100,000 atoms, graphed calls).
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=$PWD timeout 200 python3 benchmarks/results/run249/copy_out_probe.py water=.mid/water/model.dp \
  copper=.mid/copper/model.dp 2>&1 | tee $OUT/run249_copy_out.txt | grep -v Warning
