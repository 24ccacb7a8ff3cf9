#!/bin/bash
# Run 261 call 1 (one GPU, ~9 minutes): run 260's calls 5 and 4 in one call, the whole calls first (device starts were
# scarce this session: one machine had to serve both). `tail.patch` applied; its GPU tests; whole prebuilt-list calls
# as "tree", "stack" and "fused" (run260/tail_probe.py) on the trained water, copper and alloy models and compressed
# water; then each fusion alone over tiles on water's H net (65,536 rows) only (run260/stack_probe.py,
# tbar_probe.py). Carry .mid and .peer.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
R=benchmarks/results/run260
[ -f deeppot/kernels/fitting_tail.py ] || patch -p1 -s < $R/tail.patch  # main keeps the tree's path
python3 -m deeppot compress -i .mid/water/model.dp -o .mid/water/compressed.dp 2>&1 | tail -1
el tests
PYTHONPATH=$PWD:$PWD/tests timeout 90 python3 -m pytest -q tests/kernels/test_fitting_tail.py 2>&1 | tail -2
el whole calls
PYTHONPATH=$PWD:$PWD/benchmarks timeout 200 python3 $R/tail_probe.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp \
  water=.mid/water/compressed.dp --rounds 2 --calls 10 2>> $OUT/run261_err1.txt \
  | tee $OUT/run261_tail1.jsonl | cut -c1-330
el kernels alone
PYTHONPATH=$PWD timeout 120 python3 $R/stack_probe.py --model .mid/water/model.dp --rows 65536 --type 1 \
  2>> $OUT/run261_err1.txt | tee -a $OUT/run261_stack1.jsonl | cut -c1-260
PYTHONPATH=$PWD timeout 60 python3 $R/tbar_probe.py --model .mid/water/model.dp --rows 65536 --type 1 \
  2>> $OUT/run261_err1.txt | tee -a $OUT/run261_tbar1.jsonl | cut -c1-260
tail -3 $OUT/run261_err1.txt
el done
