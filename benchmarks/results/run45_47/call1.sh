#!/bin/bash
# Session 22, call 1 (H100): float64 atom tiles (int64 centre types let Triton 3.6 compile them), tile sweep and
# whole evaluation; the compressed kernels against a stream of the same table rows (issue 10); kernel tests.
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 240 python3 -m pytest -q tests/kernels tests/compress/test_kernels.py tests/gpu/test_infer.py 2>&1 | tail -3 | tee $OUT/run45_gpu_tests.txt
timeout 200 python3 benchmarks/atom_tiles_sweep.py --atoms 98304 --precision float64 | tee $OUT/run45_atom_tiles_f64.jsonl
timeout 120 python3 benchmarks/table_roofline.py --atoms 98304 --precision float32 float64 | tee $OUT/run45_table_roofline.jsonl
