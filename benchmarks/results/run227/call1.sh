#!/bin/bash
# Run 227: kinds_probe.py (small periodic frames: the "whole" graph against the "cells" one). Carry [".peer"].
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD:$PWD/benchmarks timeout 200 python3 benchmarks/results/run227/kinds_probe.py 2>&1 | grep -v Warn \
  | tee $OUT/run227_kinds_probe.txt
nvidia-smi --query-gpu=name --format=csv,noheader
