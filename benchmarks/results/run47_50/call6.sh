#!/bin/bash
# Session 23, call 6 (H100): run 52, the kept kernels (with the gradient's joint reduction): compressed-kernel and
# inference GPU tests, infer_bench with compressed models.
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/compress tests/gpu/test_infer.py > $OUT/run52_gpu_tests.txt 2>&1
tail -3 $OUT/run52_gpu_tests.txt
timeout 150 python3 benchmarks/infer_bench.py --systems water copper --precisions float32 float64 --sizes 98304 \
    --modes prebuilt_nlist --compress --data .peer/data --inputs .peer/inputs --out $OUT/run52_infer.jsonl > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run52_infer.jsonl
