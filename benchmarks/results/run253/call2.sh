#!/bin/bash
# Run 253 call 2, one GPU, this tree (the training backward's loop without hoisting; tiles unchanged):
# (1) `tile_probe.py`: float64 gradient tiles on copper and water (model64: the trained float32 weights cast);
# float32 f16x3 tiles on water, copper and the alloy; two rounds in one process each. (2) GPU tests: the training
# embedding kernels and inference.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
P=benchmarks/results/run253/tile_probe.py
el "float64 tiles"
PYTHONPATH=$PWD timeout 150 python3 $P copper=.mid/copper/model64.dp water=.mid/water/model64.dp --natoms 98304 \
  --rounds 2 --calls 8 --variants base64 grad64_1_16_4 2>> $OUT/run253_err2.txt | tee $OUT/run253_tiles64.jsonl \
  | grep -o '"system": "[^"]*"\|"variant": "[^"]*"\|"ms": [0-9.]*\|"_tiled_[a-z]*_kernel": [0-9.]*' | paste -sd' ' \
  | sed 's/"system"/\n"system"/g'
el "float32 tiles"
PYTHONPATH=$PWD timeout 200 python3 $P water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp \
  --natoms 98304 --rounds 2 --calls 20 --variants base32 grad32_2_32_4 grad32_4_32_8 t32_2_32_4 \
  2>> $OUT/run253_err2.txt | tee $OUT/run253_tiles32.jsonl \
  | grep -o '"system": "[^"]*"\|"variant": "[^"]*"\|"ms": [0-9.]*\|"_tiled_[a-z]*_kernel": [0-9.]*\|"d_force_rel": [0-9.e-]*' \
  | paste -sd' ' | sed 's/"system"/\n"system"/g'
el "tests"
mkdir -p /tmp/site && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_embedding.py \
  tests/gpu/test_infer.py 2>&1 | tail -4
el done
tail -3 $OUT/run253_err2.txt
