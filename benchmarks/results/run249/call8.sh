#!/bin/bash
# Run 249 call 8 (one GPU): find_reach by one Triton kernel (last_neighbors) against .old = 1019af7 (PyTorch's
# reductions), trained models, list prebuilt, two rounds alternating; first the kernel's GPU test.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=$PWD timeout 60 python3 -m pytest -q tests/kernels/test_descriptor.py -k "last_neighbours or reach_and_tail" \
  2>&1 | tail -1
R=$PWD
ln -sfn $PWD/.peer .old/.peer
M="water:float32=$PWD/.mid/water/model.dp copper:float32=$PWD/.mid/copper/model.dp alloy:float32=$PWD/.mid/alloy/model.dp"
for round in 1 2; do
  for t in . .old; do
    el "bench $t round $round"
    (cd $t && PYTHONPATH=$PWD timeout 60 python3 $R/benchmarks/infer_bench.py --data .peer/data \
      --inputs .peer/inputs --sizes 98304 --precisions float32 --systems water copper alloy \
      --modes prebuilt_nlist --repeat-seconds 0.8 --models $M) 2>> $OUT/run249_err8.txt \
      | sed "s/^{/{\"tree\": \"$t\", /" | tee -a $OUT/run249_call8.jsonl \
      | grep -o '"case": "[^"]*"\|"ms_median": [0-9.]*' | tr '\n' ' '
    echo
  done
done
el done
