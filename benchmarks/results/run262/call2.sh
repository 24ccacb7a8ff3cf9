#!/bin/bash
# Run 262 call 2 (one GPU, ~8 minutes): issue 9's benchmark on this tree, for the README's table: infer_bench.sh
# (fresh weights, water and copper, float32 and float64, 192 to ~1e6 atoms, DeePMD-kit 3.2.0 in the same call),
# with compressed copies, the fused path only (the PyTorch path's rows are run 154's). Carry .peer (with whl/).
set -u
export PYTHONUNBUFFERED=1
OUT=$OUT bash benchmarks/infer_bench.sh --compress --paths auto --modes eval prebuilt_nlist 2>&1 | tail -60
