#!/bin/bash
# Session 22, call 2 (H100): the default kernels after run 45 (float64: T as atom tiles (1, 16, 4), gradient one
# atom a program) through infer_bench; more float64 T tiles around the fastest; kernel tests.
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
timeout 200 python3 -m pytest -q tests/kernels tests/gpu/test_infer.py 2>&1 | tail -3 | tee $OUT/run46_gpu_tests.txt
timeout 200 python3 benchmarks/infer_bench.py --systems water --precisions float64 float32 --sizes 12288 98304 \
    --modes prebuilt_nlist --data .peer/data --inputs .peer/inputs --out $OUT/run46_infer.jsonl > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run46_infer.jsonl
timeout 150 python3 benchmarks/atom_tiles_sweep.py --atoms 98304 --precision float64 \
    --tiles 1,16,4 1,8,4 1,16,2 1,16,8 2,8,2 | tee $OUT/run46_atom_tiles_f64.jsonl
