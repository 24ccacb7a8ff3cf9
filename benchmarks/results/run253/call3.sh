#!/bin/bash
# Run 253 call 3, one GPU: float64 tanh's reciprocal. Trees: . = one Newton step from float32's reciprocal taken
# by libdevice's fast_dividef (no range check); .va = one Newton step from `/` (Triton's float32 division);
# .old = c6f6c24 (two Newton steps from `/`). tanh_probe.py (whole prebuilt-list calls and kernel ms), float64
# water and copper 98,304 atoms (the trained weights cast), alternating trees, two rounds; then GPU tests (this tree).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
P=$PWD/benchmarks/results/run253/tanh_probe.py
for round in 1 2; do
  for t in . .va .old; do
    el "$t round $round"
    PYTHONPATH=$PWD/$t timeout 100 python3 $P water=.mid/water/model64.dp copper=.mid/copper/model64.dp --natoms 98304 \
      --rounds 1 --calls 8 2>> $OUT/run253_err3.txt | sed "s/^{/{\"tree\": \"$t\", \"round\": $round, /" \
      | tee -a $OUT/run253_tanh.jsonl \
      | grep -o '"system": "[^"]*"\|"ms": [0-9.]*\|"_tiled_[a-z]*_kernel": [0-9.]*' | paste -sd' '
  done
done
el "tests"
mkdir -p /tmp/site && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
PYTHONPATH=/tmp/site:$PWD timeout 300 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_activation.py \
  tests/kernels/test_fitting.py tests/compress/test_kernels.py tests/gpu/test_infer.py 2>&1 | tail -3
PYTHONPATH=/tmp/site:$PWD timeout 120 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_descriptor.py \
  -k "float64 or atom_tiles" 2>&1 | tail -3
el done
tail -3 $OUT/run253_err3.txt
