#!/bin/bash
# Prepared in run 267, not run: the f16x3 atom tiles re-timed after the transposed T and reading ahead (~3 minutes;
# carry .mid and .peer): tile_ab.py on water, copper and the alloy, two rounds.
source benchmarks/results/call_prelude.sh
el tiles
PYTHONPATH=$PWD:$PWD/benchmarks timeout 240 python3 benchmarks/results/run267/tile_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 2 --calls 10 \
  2>> $OUT/run267_err5.txt | tee $OUT/run267_tiles5.jsonl | cut -c1-300
el done
