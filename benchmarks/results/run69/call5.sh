#!/bin/bash
# Run 73 (one H100), at 9e6a26a: the compiled water float64 and alloy float32 steps, new and 41bba67 (.old) in the
# same call (the float64 compiled step also stacks value and tangent; the alloy's compiled step keeps the fused
# kernels and gains only the packed gathers).
set -u
export PYTHONUNBUFFERED=1
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
for c in water:float64:compile alloy:float32:compile; do
  for tree in . .old; do
    env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks python3 $tree/$B $c | sed "s#^{#{\"tree\": \"$tree\", #" \
      >> $OUT/run73_train.jsonl 2>> $OUT/run73_err.txt
    tail -qn1 $OUT/run73_train.jsonl | cut -c1-150
  done
done
