#!/bin/bash
# Session 21, call 2 (H100): atom tiles with weights re-read per chunk and per-atom row reductions (sweep);
# the fitting net's GEMMs in 3xTF32 (Triton) against cuBLAS FP32; kernel tests on the GPU.
# (benchmarks/fitting_gemm.py and deeppot/kernels/matmul.py were removed after this run: 1-3% was not worth a kernel;
# the sweep then had a RELOAD switch, now always on.)
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el tests
timeout 200 python3 -m pytest -q -x tests/kernels/test_descriptor.py tests/kernels/test_matmul.py tests/compress/test_kernels.py 2>&1 | tail -3
el gemm
timeout 150 python3 benchmarks/fitting_gemm.py --atoms 98304 | tee $OUT/run40_fitting_gemm.jsonl
el tiles
timeout 300 python3 benchmarks/atom_tiles_sweep.py --atoms 98304 | tee $OUT/run40_atom_tiles.jsonl
el end
