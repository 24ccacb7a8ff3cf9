#!/bin/bash
# Session 23, call 3 (H100): run 48 found the table kernels far from bound by their L2 reads (every lookup on row 0:
# T 5.1 of 6.6 ms). Variants: coefficient-major packed rows (6, M1) for coalesced loads, and the T kernel's sum over
# slots deferred to the end; sweep the tiles with them; GPU tests (they timed out: no summary). The --variants option
# and the kernels' COEF_MAJOR / DEFER switches existed for this call only: the deferred sum was kept, the
# coefficient-major layout dropped.
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
timeout 220 python3 benchmarks/compress_tiles.py --data .peer/data --inputs .peer/inputs --precisions float32 \
    --tiles 1,16,4 1,8,4 4,4,4 8,2,4 --variants pair pair+defer coef coef+defer | tee $OUT/run49_compress_tiles_f32.jsonl
timeout 200 python3 benchmarks/compress_tiles.py --data .peer/data --inputs .peer/inputs --precisions float64 \
    --tiles 1,16,4 4,4,4 8,2,4 --variants pair pair+defer coef coef+defer | tee $OUT/run49_compress_tiles_f64.jsonl
pip install -q --no-index --no-deps .whl/ase-*.whl > /dev/null 2>&1
timeout 150 python3 -m pytest -q --continue-on-collection-errors tests/compress/test_kernels.py tests/kernels tests/gpu \
    2>&1 | grep -E "Error|error|passed|failed" | tail -8 | tee $OUT/run49_gpu_tests.txt
