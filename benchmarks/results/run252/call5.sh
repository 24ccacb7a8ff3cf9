#!/bin/bash
# Run 252 call 5 (one GPU): the fitting kernels' tests and the inference GPU tests on the final tree, then
# infer_bench rows of this tree (PRESCALED, PERSISTENT) and .old (ba47cb1, the session's start), list prebuilt,
# trained float32 models of the three systems, uncompressed and compressed, two rounds a tree, alternating.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el tests
PYTHONPATH=$PWD timeout 150 python3 -m pytest -q -x tests/kernels/test_fitting.py 2>&1 | tail -2
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
PYTHONPATH=/tmp/site:$PWD timeout 100 python3 -m pytest -q -x tests/gpu/test_infer.py 2>&1 | tail -2
R=$PWD
ln -sfn $PWD/.peer .old/.peer
M="water:float32=$PWD/.mid/water/model.dp copper:float32=$PWD/.mid/copper/model.dp alloy:float32=$PWD/.mid/alloy/model.dp"
for t in .old . .old .; do
  el "bench $t"
  (cd $t && PYTHONPATH=$PWD timeout 100 python3 $R/benchmarks/infer_bench.py --data .peer/data \
    --inputs .peer/inputs --sizes 98304 --precisions float32 --systems water copper alloy \
    --modes prebuilt_nlist --repeat-seconds 0.8 --compress --models $M) 2>> $OUT/run252_err5.txt \
    | sed "s/^{/{\"tree\": \"$t\", /" | tee -a $OUT/run252_call5.jsonl \
    | grep -o '"case": "[^"]*"\|"ms_median": [0-9.]*' | tr '\n' ' '
  echo
done
el done
