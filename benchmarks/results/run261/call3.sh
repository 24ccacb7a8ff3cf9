#!/bin/bash
# Run 261 call 3 (ran on the same warm H100, 38 s; the command as sent): tail.patch's tests on CUDA, then the tiles
# around call 2's best (stack_tiles.py --second). The compressed model was gone (the carried .mid replaced the
# folder), so that model's rows are missing (run261_err3.txt). Carry .mid and .peer.
set -u; export PYTHONUNBUFFERED=1
[ -f deeppot/kernels/fitting_tail.py ] || patch -p1 -s < benchmarks/results/run260/tail.patch
PYTHONPATH=$PWD:$PWD/tests timeout 90 python3 -m pytest -q tests/kernels/test_fitting_tail.py 2>&1 | tail -4
PYTHONPATH=$PWD:$PWD/benchmarks timeout 200 python3 benchmarks/results/run261/stack_tiles.py --second \
  water=.mid/water/model.dp copper=.mid/copper/model.dp water=.mid/water/compressed.dp --rounds 2 --calls 10 \
  2>> $OUT/run261_err3.txt | tee $OUT/run261_tiles3.jsonl | cut -c1-150; tail -2 $OUT/run261_err3.txt
