#!/bin/bash
# Run 76 (one H100): fitting-GEMM split-K micro-benchmark; the batch as one gather (packed frame rows) against
# 1b99932 (.old) in the same call.
set -u
export PYTHONUNBUFFERED=1
env PYTHONPATH=$PWD python3 benchmarks/results/run76/gemm_splitk.py > $OUT/run76_gemm.jsonl 2> $OUT/run76_err.txt
cat $OUT/run76_gemm.jsonl
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
for c in copper:float32:compile water:float64 copper:float32 water:float32:compile; do
  for tree in . .old; do
    env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks python3 $tree/$B $c | sed "s#^{#{\"tree\": \"$tree\", #" \
      >> $OUT/run76_train.jsonl 2>> $OUT/run76_err.txt
    tail -qn1 $OUT/run76_train.jsonl | cut -c1-150
  done
done
