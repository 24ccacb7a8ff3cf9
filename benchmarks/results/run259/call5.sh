#!/bin/bash
# Run 259 call 5 (prepared, never run: no machine could be started; one GPU, the session's last device minutes after five failed starts): D's float16 parts for the
# first fitting layer on `PARTS_TILE` (two stages: 196,624 B of shared memory, compiled for sm_90 on the CPU):
# their GPU tests, then parts_probe.py (whole / parts) on trained water and copper.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
patch -p1 -s < benchmarks/results/run259/d_parts.patch  # the tree keeps D whole; this call measures the parts
el tests
PYTHONPATH=$PWD:$PWD/tests timeout 60 python3 -m pytest -q tests/kernels/test_fitting.py \
  tests/kernels/test_descriptor.py -k "parts" 2>&1 | tail -2
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 100 python3 benchmarks/results/run259/parts_probe.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp --rounds 2 --calls 10 --variants whole parts \
  2>> $OUT/run259_err5.txt | tee $OUT/run259_parts5.jsonl | cut -c1-300
tail -2 $OUT/run259_err5.txt
el done
