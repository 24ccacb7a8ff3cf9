#!/bin/bash
# Run 251 call 6 (one GPU): the final tree (c6a2361: held weights told by the argument's type): the descriptor kernels'
# tests and tests/gpu/test_infer.py, then infer_bench rows, list prebuilt, two rounds.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
el tests
PYTHONPATH=/tmp/site:$PWD timeout 300 python3 -m pytest -q tests/kernels/test_descriptor.py tests/gpu/test_infer.py \
  2>&1 | tail -2 | tee $OUT/run251_tests6.txt
M="water:float32=$PWD/.mid/water/model.dp copper:float32=$PWD/.mid/copper/model.dp alloy:float32=$PWD/.mid/alloy/model.dp"
for r in 1 2; do
  el "bench $r"
  PYTHONPATH=$PWD timeout 100 python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
    --sizes 98304 --precisions float32 --systems water copper alloy --modes prebuilt_nlist --repeat-seconds 0.8 \
    --models $M 2>> $OUT/run251_err6.txt | tee -a $OUT/run251_call6.jsonl \
    | grep -o '"case": "[^"]*"\|"ms_median": [0-9.]*' | tr '\n' ' '
  echo
done
el done
