#!/bin/bash
# Session 24, call 3 (H100): run 56. The tile kernels take how far to walk a block from scalar loads instead of a
# tl.max over the rows (run 55: that made them 20-40% slower even visiting every slot); the tail as one
# embedding_bag. GPU tests; reach_bench; tile sweeps with the reach (atom tiles, compressed tiles).
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
timeout 170 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_descriptor.py tests/compress/test_kernels.py \
    tests/gpu/test_infer.py > $OUT/run56_gpu_tests.txt 2>&1
tail -3 $OUT/run56_gpu_tests.txt
timeout 200 python3 benchmarks/reach_bench.py --data .peer/data --inputs .peer/inputs > $OUT/run56_reach.jsonl
cut -c1-420 $OUT/run56_reach.jsonl
timeout 80 python3 benchmarks/atom_tiles_sweep.py --atoms 98304 --precision float32 \
    --tiles 4,16,4 2,16,4 8,8,4 4,8,4 2,8,4 > $OUT/run56_tiles_f32.jsonl
timeout 60 python3 benchmarks/atom_tiles_sweep.py --atoms 98304 --precision float64 \
    --tiles 1,16,4 2,8,4 1,8,4 > $OUT/run56_tiles_f64.jsonl
cut -c1-420 $OUT/run56_tiles_f32.jsonl $OUT/run56_tiles_f64.jsonl
timeout 120 python3 benchmarks/compress_tiles.py --data .peer/data --inputs .peer/inputs --precisions float32 float64 \
    --tiles 1,8,4 1,16,4 2,8,4 4,4,4 8,2,4 > $OUT/run56_compress_tiles.jsonl
cut -c1-420 $OUT/run56_compress_tiles.jsonl
