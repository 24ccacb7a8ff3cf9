#!/bin/bash
# Run 252 call 6 (one GPU): the compressed table kernels with G' by the derivative's Horner recurrence
# (compressed._table_jet): their GPU tests, then infer_bench rows of this tree and .old (a9188a6, without it), list
# prebuilt, water and copper, trained float32 and fresh float64 models, compressed, two rounds a tree, alternating.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el tests
PYTHONPATH=$PWD timeout 100 python3 -m pytest -q -x tests/compress/test_kernels.py 2>&1 | tail -2
R=$PWD
ln -sfn $PWD/.peer .old/.peer
M="water:float32=$PWD/.mid/water/model.dp copper:float32=$PWD/.mid/copper/model.dp"
for t in .old . .old .; do
  el "bench $t"
  (cd $t && PYTHONPATH=$PWD timeout 100 python3 $R/benchmarks/infer_bench.py --data .peer/data \
    --inputs .peer/inputs --sizes 98304 --precisions float32 float64 --systems water copper \
    --modes prebuilt_nlist --repeat-seconds 0.6 --compress --models $M) 2>> $OUT/run252_err6.txt \
    | sed "s/^{/{\"tree\": \"$t\", /" | tee -a $OUT/run252_call6.jsonl \
    | grep -o '"case": "[^"]*compressed"\|"ms_median": [0-9.]*' | tr '\n' ' '
  echo
done
el done
