#!/bin/bash
# Session 23, call 4 (H100): the kept kernels (T reduced over slots once at the end; tiles float32 T 1x8, gradient
# 1x16, float64 T 8x2, gradient 4x4): GPU tests, infer_bench with compressed models, table_roofline.
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
pip install -q --no-index --no-deps .whl/ase-*.whl > /dev/null 2>&1
timeout 260 python3 -m pytest -q -p no:cacheprovider --continue-on-collection-errors tests/compress/test_kernels.py \
    tests/kernels tests/gpu > $OUT/run50_gpu_tests.txt 2>&1; tail -15 $OUT/run50_gpu_tests.txt
timeout 150 python3 benchmarks/infer_bench.py --systems water copper --precisions float32 float64 --sizes 98304 \
    --modes prebuilt_nlist --compress --data .peer/data --inputs .peer/inputs --out $OUT/run50_infer.jsonl > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run50_infer.jsonl
timeout 100 python3 benchmarks/table_roofline.py --atoms 98304 --precision float32 float64 | tee $OUT/run50_table_roofline.jsonl
