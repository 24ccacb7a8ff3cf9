#!/bin/bash
# Session 23, call 1 (H100): compressed kernels as atom tiles. GPU tests of every kernel (the tiles of
# tests/compress, and the review commit 00f9a88's shared weight loads), then the tile sweep of the compressed
# kernels on replicated water with the frame's statistics: sorted (DeePMD order) against shuffled blocks.
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 240 python3 -m pytest -q tests/compress/test_kernels.py tests/kernels tests/gpu 2>&1 | tail -4 | tee $OUT/run47_gpu_tests.txt
timeout 330 python3 benchmarks/compress_tiles.py --data .peer/data --inputs .peer/inputs --precisions float32 float64 \
    --tiles 1,16,4 4,8,4 8,8,4 8,4,4 16,4,4 16,8,8 32,4,4 32,4,8 32,2,4 64,2,8 | tee $OUT/run47_compress_tiles.jsonl
