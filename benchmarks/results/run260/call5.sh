#!/bin/bash
# Run 260 call 5 (prepared, never ran: no device time left; one GPU, ~4 minutes): `tail.patch` (fitting_tail: a
# fitting net's value and dE/dT in three launches) applied, its GPU tests, then whole prebuilt-list calls of the
# trained models with it ("fused"), with the stack alone ("stack") and without it ("tree"): tail_probe.py. Run
# call4.sh first (each kernel alone, over tiles): the patch's tiles are the CPU compile's picks, not timed ones.
# Carry .mid and .peer.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
[ -f deeppot/kernels/fitting_tail.py ] || patch -p1 -s < benchmarks/results/run260/tail.patch  # main keeps the tree's path
python3 -m deeppot compress -i .mid/water/model.dp -o .mid/water/compressed.dp 2>&1 | tail -1
el tests
PYTHONPATH=$PWD:$PWD/tests timeout 90 python3 -m pytest -q tests/kernels/test_fitting_tail.py 2>&1 | tail -2
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 200 python3 benchmarks/results/run260/tail_probe.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp \
  water=.mid/water/compressed.dp --rounds 2 --calls 10 2>> $OUT/run260_err5.txt \
  | tee $OUT/run260_tail5.jsonl | cut -c1-330
tail -2 $OUT/run260_err5.txt
el done
