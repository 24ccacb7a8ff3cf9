#!/bin/bash
# Run 252 call 4 (one GPU): the fitting products as a persistent TMA kernel (`fitting_gemm.PERSISTENT`): kernel
# tests, then fit_probe.py on trained water (and its compressed model), copper and the alloy, then the inference tests.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el tests
PYTHONPATH=$PWD timeout 120 python3 -m pytest -q -x tests/kernels/test_fitting.py 2>&1 | tail -2
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 300 python3 benchmarks/results/run252/fit_probe.py \
  water=.mid/water/model.dp water=.mid/water/compressed.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp \
  --rounds 2 2>> $OUT/run252_err4.txt | tee $OUT/run252_call4.jsonl | cut -c1-330
tail -5 $OUT/run252_err4.txt
el gpu tests
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
PYTHONPATH=/tmp/site:$PWD timeout 100 python3 -m pytest -q -x tests/gpu/test_infer.py 2>&1 | tail -2
el done
