#!/bin/bash
# Run 253 call 4, one GPU. (1) GPU tests of this tree (3ea1ccc: float64 tanh with one Newton step, float64 gradient
# tiles (1, 16, 4), the training backward's loop not hoisted). (2) The compressed table kernels' chunk loops without
# loop-invariant code motion (.vc; ptxas: float64 T 64 -> 32 B spilled) against this tree: infer_bench rows, list
# prebuilt, water and copper 98,304 atoms, trained float32 models and fresh float64 ones, compressed, alternating.
# (3) This tree against the session's start (.s0 = 5f6fb6a): float64 inference (tanh_probe.py, the trained weights
# cast) and the float64 water training step (train_bench.py, fused, 1000 steps).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
R=$PWD
el tests
mkdir -p /tmp/site && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_activation.py \
  tests/compress/test_kernels.py tests/kernels/test_descriptor.py -k "float64 or atom_tiles or not descriptor" 2>&1 | tail -2
for t in .vc .s0; do ln -sfn $PWD/.peer $t/.peer; done
M="water:float32=$PWD/.mid/water/model.dp copper:float32=$PWD/.mid/copper/model.dp"
for t in . .vc . .vc; do
  el "compressed $t"
  (cd $t && PYTHONPATH=$PWD timeout 70 python3 $R/benchmarks/infer_bench.py --data .peer/data \
    --inputs .peer/inputs --sizes 98304 --precisions float32 float64 --systems water copper \
    --modes prebuilt_nlist --repeat-seconds 0.5 --compress --models $M) 2>> $OUT/run253_err4.txt \
    | sed "s/^{/{\"tree\": \"$t\", /" | tee -a $OUT/run253_call4.jsonl \
    | grep -o '"case": "[^"]*compressed"\|"ms_median": [0-9.]*' | tr '\n' ' '
  echo
done
P=$PWD/benchmarks/results/run253/tanh_probe.py
for t in . .s0 . .s0; do
  el "float64 inference $t"
  PYTHONPATH=$PWD/$t timeout 60 python3 $P water=.mid/water/model64.dp copper=.mid/copper/model64.dp --natoms 98304 \
    --rounds 1 --calls 8 2>> $OUT/run253_err4.txt | sed "s/^{/{\"tree\": \"$t\", /" | tee -a $OUT/run253_f64.jsonl \
    | grep -o '"system": "[^"]*"\|"ms": [0-9.]*\|"_tiled_[a-z]*_kernel": [0-9.]*' | paste -sd' '
done
for t in . .s0; do
  el "train $t"
  (cd $t && PYTHONPATH=$PWD timeout 60 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
    --steps 1000 water:float64:fused) 2>> $OUT/run253_err4.txt | sed "s/^{/{\"tree\": \"$t\", /" \
    | tee -a $OUT/run253_train.jsonl | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"rmse_f_val": [0-9.]*' | tr '\n' ' '
  echo
done
el done
tail -3 $OUT/run253_err4.txt
