#!/bin/bash
# Session 24, call 4 (H100): run 57. Kernels walk each block up to the furthest reach of the program's atoms with no
# per-row reach mask (run 55/56: that mask doubled the tiled kernels' register spills, ptxas -v: T 396 -> 676 bytes,
# gradient 828 -> 1496); the tail covers what the program did not visit, excluded pairs enter as padding.
# GPU tests; reach_bench; infer_bench water/copper/alloy, both precisions, compressed too; short tile sweep.
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_descriptor.py tests/compress/test_kernels.py \
    tests/gpu/test_infer.py > $OUT/run57_gpu_tests.txt 2>&1
tail -3 $OUT/run57_gpu_tests.txt
timeout 170 python3 benchmarks/reach_bench.py --data .peer/data --inputs .peer/inputs > $OUT/run57_reach.jsonl
cut -c1-420 $OUT/run57_reach.jsonl
timeout 190 python3 benchmarks/infer_bench.py --systems water copper alloy --precisions float32 float64 --sizes 98304 \
    --modes prebuilt_nlist --compress --data .peer/data --inputs .peer/inputs --out $OUT/run57_infer.jsonl > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run57_infer.jsonl
timeout 50 python3 benchmarks/atom_tiles_sweep.py --atoms 98304 --precision float32 --tiles 4,16,4 8,8,4 > $OUT/run57_tiles.jsonl
cut -c1-420 $OUT/run57_tiles.jsonl
