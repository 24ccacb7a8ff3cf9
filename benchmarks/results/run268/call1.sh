#!/bin/bash
# Run 268, call 1 (~6 minutes; carry .mid and .peer): run 267's call5.sh (the atom tiles re-timed on the
# transposed T reading ahead, `run267/tile_ab.py`), then the pair data's owners and types as int32 against int64
# and the rows made by the pair-data kernel (`pairs_ab.py`); water, copper and the alloy, two rounds each.
source benchmarks/results/call_prelude.sh
el tiles
PYTHONPATH=$PWD:$PWD/benchmarks timeout 240 python3 benchmarks/results/run267/tile_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 2 --calls 10 \
  2>> $OUT/run268_err1.txt | tee $OUT/run268_tiles1.jsonl | cut -c1-300
el pairs
PYTHONPATH=$PWD:$PWD/benchmarks timeout 200 python3 benchmarks/results/run268/pairs_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 2 --calls 20 \
  2>> $OUT/run268_err1.txt | tee $OUT/run268_pairs1.jsonl | cut -c1-400
el done
