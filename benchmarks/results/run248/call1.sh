#!/bin/bash
# Run 248 (one GPU): models trained 200 steps on the CPU from the shared data (.mid/*/model.dp, carried) timed by
# infer_bench.py --models in this tree against .old (c3b2dae: before precision.descriptor_bound and LIMIT 2^15, so
# trained models took tf32x3); then the GPU tests of tests/gpu and tests/compress (ASE from a carried wheel), which
# the last session could not run after its range-check change.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
R=$PWD
ln -sfn $PWD/.peer .old/.peer
M="water:float32=$PWD/.mid/water/model.dp copper:float32=$PWD/.mid/copper/model.dp alloy:float32=$PWD/.mid/alloy/model.dp"
for round in 1 2; do
  for t in . .old; do
    el "bench $t round $round"
    (cd $t && PYTHONPATH=$PWD timeout 100 python3 $R/benchmarks/infer_bench.py --data .peer/data \
      --inputs .peer/inputs --sizes 98304 --precisions float32 --systems water copper alloy --modes eval \
      --repeat-seconds 1.5 --models $M) 2>> $OUT/run248_err.txt | sed "s/^{/{\"tree\": \"$t\", /" \
      | tee -a $OUT/run248_trained.jsonl | grep -o '"case": "[^"]*"\|"path": "[^"]*"\|"ms_median": [0-9.]*\|"e_per_atom": [0-9.e-]*' | tr '\n' ' '
    echo
  done
done
el tests
PYTHONPATH=/tmp/site:$PWD timeout 330 python3 -m pytest -q --durations=10 tests/gpu tests/compress \
  > $OUT/run248_gpu_tests.txt 2>&1
tail -16 $OUT/run248_gpu_tests.txt
el done
