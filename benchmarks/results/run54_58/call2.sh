#!/bin/bash
# Session 24, call 2 (H100): run 55. Float64 atom tiles read the reach as int64 (run 54: an int32 reach broke their
# compile, as int32 types did in run 40). GPU tests; reach_bench (each kernel visiting every slot vs up to the
# reach, the host's reach and tail, the whole evaluation); infer_bench float64 uncompressed (run 54 failed it);
# the atom-tile sweep with the reach.
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
timeout 170 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_descriptor.py tests/compress/test_kernels.py \
    tests/gpu/test_infer.py > $OUT/run55_gpu_tests.txt 2>&1
tail -3 $OUT/run55_gpu_tests.txt
timeout 200 python3 benchmarks/reach_bench.py --data .peer/data --inputs .peer/inputs > $OUT/run55_reach.jsonl
cat $OUT/run55_reach.jsonl
timeout 90 python3 benchmarks/infer_bench.py --systems water copper alloy --precisions float64 --sizes 98304 \
    --modes prebuilt_nlist --data .peer/data --inputs .peer/inputs --out $OUT/run55_infer.jsonl > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run55_infer.jsonl
timeout 100 python3 benchmarks/atom_tiles_sweep.py --atoms 98304 --precision float32 float64 > $OUT/run55_tiles.jsonl
cat $OUT/run55_tiles.jsonl | cut -c1-400
