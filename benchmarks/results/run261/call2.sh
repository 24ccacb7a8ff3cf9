#!/bin/bash
# Run 261 call 2 (ran on the H100 warm from call 1, 40 s; the command as sent): the hidden stack's tiles in whole
# calls (stack_tiles.py's first set) against the tree, tail.patch applied. Carry .mid and .peer.
set -u; export PYTHONUNBUFFERED=1; nvidia-smi --query-gpu=name --format=csv,noheader
[ -f deeppot/kernels/fitting_tail.py ] || patch -p1 -s < benchmarks/results/run260/tail.patch
python3 -m deeppot compress -i .mid/water/model.dp -o .mid/water/compressed.dp 2>&1 | tail -1
PYTHONPATH=$PWD:$PWD/benchmarks timeout 260 python3 benchmarks/results/run261/stack_tiles.py water=.mid/water/model.dp \
  copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp water=.mid/water/compressed.dp --rounds 2 --calls 10 \
  2>> $OUT/run261_err2.txt | tee $OUT/run261_tiles2.jsonl | cut -c1-200; tail -2 $OUT/run261_err2.txt
