#!/bin/bash
# Run 268, call 2 (~7 minutes; carry .mid, .peer and .whl): the pair data's owners and types as int32 against
# int64 (`index_ab.py`, water, copper and the alloy, two rounds), then all of tests/gpu on this tree.
source benchmarks/results/call_prelude.sh
el index
PYTHONPATH=$PWD:$PWD/benchmarks timeout 150 python3 benchmarks/results/run268/index_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 2 --calls 20 \
  2>> $OUT/run268_err2.txt | tee $OUT/run268_index2.jsonl | cut -c1-400
el gpu tests
PYTHONPATH=/tmp/site:$PWD:$PWD/tests timeout 300 python3 -m pytest -q tests/gpu 2>&1 \
  | tee $OUT/run268_gpu_tests2.txt | tail -4
el done
