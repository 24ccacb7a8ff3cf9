#!/bin/bash
# Run 65 (one H100): after the save fix (5589bbc), the compiled alloy step with padding-skipping kernels against
# .old (ec7074a) in the same call; the fused kernels' tile (BLOCK_J:num_warps) on the alloy; water float64 with the
# timed embedding choice, new and old.
set -u
export PYTHONUNBUFFERED=1
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
for c in alloy:float32:compile water:float64; do
  env PYTHONPATH=$PWD:$PWD/benchmarks python3 $B $c >> $OUT/run65_train.jsonl 2>> $OUT/run65_err.txt
  env PYTHONPATH=$PWD/.old:$PWD/.old/benchmarks python3 .old/$B $c >> $OUT/run65_train_before.jsonl 2>> $OUT/run65_err.txt
  tail -qn1 $OUT/run65_train.jsonl $OUT/run65_train_before.jsonl | cut -c1-130
done
for tile in 16:8 16:4 32:8 32:4; do
  DEEPPOT_BENCH_EMBED_TILE=$tile env PYTHONPATH=$PWD:$PWD/benchmarks python3 $B alloy:float32:fused \
    | sed "s/^{/{\"tile\": \"$tile\", /" >> $OUT/run65_tiles.jsonl 2>> $OUT/run65_err.txt
  tail -n1 $OUT/run65_tiles.jsonl | cut -c1-130
done
