#!/bin/bash
# Session 24, call 5 (H100): run 58. As run 57, with the float64 tiles' centre types int64 again (run 57 set
# them before net_args, which made them int32: the float64 tile kernels failed to compile). Kernels walk each block up to the furthest reach of the program's atoms with no
# per-row reach mask (run 55/56: that mask doubled the tiled kernels' register spills, ptxas -v: T 396 -> 676 bytes,
# gradient 828 -> 1496); the tail covers what the program did not visit, excluded pairs enter as padding.
# GPU tests; reach_bench; infer_bench water/copper/alloy, both precisions, compressed too; short tile sweep.
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_descriptor.py tests/compress/test_kernels.py \
    tests/gpu/test_infer.py > $OUT/run58_gpu_tests.txt 2>&1
tail -3 $OUT/run58_gpu_tests.txt
timeout 170 python3 benchmarks/reach_bench.py --data .peer/data --inputs .peer/inputs > $OUT/run58_reach.jsonl
cut -c1-420 $OUT/run58_reach.jsonl
timeout 190 python3 benchmarks/infer_bench.py --systems water copper alloy --precisions float32 float64 --sizes 98304 \
    --modes prebuilt_nlist --compress --data .peer/data --inputs .peer/inputs --out $OUT/run58_infer.jsonl > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run58_infer.jsonl
timeout 50 python3 benchmarks/atom_tiles_sweep.py --atoms 98304 --precision float64 --tiles 1,16,4 2,8,4 > $OUT/run58_tiles.jsonl
cut -c1-420 $OUT/run58_tiles.jsonl
