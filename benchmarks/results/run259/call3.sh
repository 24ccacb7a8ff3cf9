#!/bin/bash
# Run 259 call 3 (prepared, never completed: no machine could be started in session 24, and in session 25 the machine
# was taken back mid-call; call 4 measured the patch instead; one GPU): D's float16 parts written by the T kernels for the first fitting layer
# (`fitting_gemm.X_PARTS`, on `PARTS_TILE` after call 2 ran out of shared memory): GPU tests of the changed
# kernels and tests/gpu/test_infer.py, parts_probe.py on trained models, the fitting products alone at water's shapes
# (gemm_probe.py: x's parts on other tiles), infer_bench.py's prebuilt-list calls against .old (1c4c1b3).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
patch -p1 -s < benchmarks/results/run259/d_parts.patch  # the tree keeps D whole; this call measures the parts
R=$PWD
ln -sfn $PWD/.peer .old/.peer
python3 -m deeppot compress -i .mid/water/model.dp -o .mid/water/compressed.dp 2>&1 | tail -1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
el tests
PYTHONPATH=$PWD:$PWD/tests timeout 150 python3 -m pytest -q tests/kernels/test_fitting.py \
  tests/kernels/test_descriptor.py tests/compress/test_kernels.py -k "parts or persistent or writes_d or fused" \
  2>&1 | tail -3
PYTHONPATH=/tmp/site:$PWD:$PWD/tests timeout 120 python3 -m pytest -q tests/gpu/test_infer.py 2>&1 | tail -2
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 200 python3 benchmarks/results/run259/parts_probe.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp \
  water=.mid/water/compressed.dp --rounds 2 2>> $OUT/run259_err3.txt | tee $OUT/run259_parts3.jsonl | cut -c1-330
el gemm
PYTHONPATH=$PWD timeout 100 python3 benchmarks/results/run259/gemm_probe.py --rows 65536 \
  2>> $OUT/run259_err3.txt | tee $OUT/run259_gemm3.jsonl | cut -c1-200
M="water:float32=$R/.mid/water/model.dp copper:float32=$R/.mid/copper/model.dp alloy:float32=$R/.mid/alloy/model.dp"
bench() {  # tree round
  el "bench $1 round $2"
  (cd $1 && PYTHONPATH=$PWD timeout 100 python3 $R/benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
    --sizes 98304 --precisions float32 --systems water copper alloy --modes prebuilt_nlist --compress \
    --repeat-seconds 1.0 --models $M) 2>> $OUT/run259_err3.txt | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" \
    | tee -a $OUT/run259_bench3.jsonl | grep -o '"case": "[^"]*"\|"ms_median": [0-9.]*' | tr '\n' ' '
  echo
}
[ $(( $(date +%s) - T0 )) -gt 330 ] && { el "skip bench"; exit 0; }
bench . 1; bench .old 1
tail -3 $OUT/run259_err3.txt
el done
