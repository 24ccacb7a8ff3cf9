#!/bin/bash
# Run 74 (one H100): FusedAdam with parameters split into pieces (more blocks in torch's multi-tensor update): the
# update alone for piece sizes (adam_pieces.py), then steps new and 813528b (.old) in the same call.
set -u
export PYTHONUNBUFFERED=1
env PYTHONPATH=$PWD python3 benchmarks/results/run69/adam_pieces.py > $OUT/run74_adam_pieces.jsonl 2> $OUT/run74_err.txt
cat $OUT/run74_adam_pieces.jsonl
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
for c in water:float64 copper:float32 copper:float32:compile; do
  for tree in . .old; do
    env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks python3 $tree/$B $c | sed "s#^{#{\"tree\": \"$tree\", #" \
      >> $OUT/run74_train.jsonl 2>> $OUT/run74_err.txt
    tail -qn1 $OUT/run74_train.jsonl | cut -c1-150
  done
done
timeout 100 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider tests/train/test_adam.py tests/gpu/test_graph_step.py \
  > $OUT/run74_gpu_tests.txt 2>&1; tail -2 $OUT/run74_gpu_tests.txt
