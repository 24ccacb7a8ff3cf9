#!/bin/bash
# Session 23, call 2 (H100): the tiles chosen from run 47 (float32 T 8x4, gradient one atom; float64 both 8x4):
# GPU tests (ASE from the carried wheel, for tests/gpu/test_md_gpu.py), infer_bench with compressed models, the
# table kernels with every lookup on row 0 (table_roofline), more tiles around the fastest.
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
pip install -q --no-index --no-deps .whl/ase-*.whl 2>&1 | tail -1
timeout 200 python3 -m pytest -q tests/compress/test_kernels.py tests/kernels tests/gpu 2>&1 | tail -4 | tee $OUT/run48_gpu_tests.txt
timeout 120 python3 benchmarks/table_roofline.py --atoms 98304 --precision float32 float64 | tee $OUT/run48_table_roofline.jsonl
timeout 150 python3 benchmarks/infer_bench.py --systems water copper --precisions float32 float64 --sizes 98304 \
    --modes prebuilt_nlist --compress --data .peer/data --inputs .peer/inputs --out $OUT/run48_infer.jsonl > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run48_infer.jsonl
timeout 120 python3 benchmarks/compress_tiles.py --data .peer/data --inputs .peer/inputs --precisions float32 \
    --tiles 8,4,4 4,4,4 2,8,4 8,2,4 16,2,4 8,4,8 1,8,4 1,32,4 | tee $OUT/run48_compress_tiles_f32.jsonl
timeout 100 python3 benchmarks/compress_tiles.py --data .peer/data --inputs .peer/inputs --precisions float64 \
    --tiles 8,4,4 4,4,4 8,2,4 16,2,4 2,8,4 8,4,8 | tee $OUT/run48_compress_tiles_f64.jsonl
