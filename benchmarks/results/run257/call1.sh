#!/bin/bash
# Run 257 call 1 (one GPU): the inference stage's memory-bound steps folded together (the reach in one Triton pass,
# the tail and D in the atom-tile T kernel, the scatter reading only real slots): GPU tests of the changed kernels,
# stage_probe.py (the variants in one process) on trained water, copper and the alloy (float32) and water and
# copper cast to float64, then infer_bench.py against .old (120b4e4, the session's start), compressed too.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
R=$PWD
ln -sfn $PWD/.peer .old/.peer
ln -sfn $PWD/.mid .old/.mid
el tests
PYTHONPATH=$PWD timeout 200 python3 -m pytest -q -x tests/kernels/test_descriptor.py tests/kernels/test_scatter.py \
  tests/kernels/test_descriptor_matrix.py 2>&1 | tail -3
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 300 python3 benchmarks/results/run257/stage_probe.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp water=.mid/water/model64.dp \
  --rounds 2 2>> $OUT/run257_err1.txt | tee $OUT/run257_probe1.jsonl | cut -c1-300
tail -3 $OUT/run257_err1.txt
M="water:float32=$R/.mid/water/model.dp copper:float32=$R/.mid/copper/model.dp alloy:float32=$R/.mid/alloy/model.dp"
bench() {  # tree round
  el "bench $1 round $2"
  (cd $1 && PYTHONPATH=$PWD timeout 110 python3 $R/benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
    --sizes 98304 --precisions float32 --systems water copper alloy --modes prebuilt_nlist --compress \
    --repeat-seconds 1.0 --models $M) 2>> $OUT/run257_err1.txt | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" \
    | tee -a $OUT/run257_bench1.jsonl | grep -o '"case": "[^"]*"\|"ms_median": [0-9.]*\|"e_per_atom": [0-9.e-]*' \
    | tr '\n' ' '
  echo
}
[ $(( $(date +%s) - T0 )) -gt 420 ] && { el "skip bench"; exit 0; }
bench . 1; bench .old 1
[ $(( $(date +%s) - T0 )) -gt 520 ] && { el "skip round 2"; exit 0; }
bench .old 2; bench . 2
el gpu tests
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
PYTHONPATH=/tmp/site:$PWD timeout 60 python3 -m pytest -q -x tests/gpu/test_infer.py 2>&1 | tail -2
el done
