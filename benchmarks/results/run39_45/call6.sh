#!/bin/bash
# Session 21, call 6 (H100): after the review refactor of atom_tiles (tile helper, RT only for T, net_meta):
# kernel tests on the GPU and the chosen tiles timed again.
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
timeout 200 python3 -m pytest -q tests/kernels tests/compress/test_kernels.py tests/gpu/test_infer.py 2>&1 | tail -2 | tee $OUT/run44_gpu_tests.txt
timeout 200 python3 benchmarks/atom_tiles_sweep.py --atoms 98304 --variants 3 | tee $OUT/run44_atom_tiles.jsonl
