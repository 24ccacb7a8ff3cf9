#!/bin/bash
# Run 257 call 2 (one GPU): the forces and virials from the gradient kernel's dE/dR_ij in one kernel
# (`scatter.back_and_scatter`, `descriptor.SCATTER_IN_STAGE`) on top of call 1's changes: GPU tests, stage_probe.py
# (base / call 1's tree / all) on trained water, copper, the alloy, water cast to float64 and water compressed, the
# float32 error against float64 (accuracy_probe.py), then infer_bench.py against .old (120b4e4) once more.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
R=$PWD
ln -sfn $PWD/.peer .old/.peer
ln -sfn $PWD/.mid .old/.mid
python3 -c "
from deeppot.io.model_file import load_model, cast_model, save_model
save_model(cast_model(load_model('.mid/water/model.dp'), 'float64'), '.mid/water/model64.dp')"
python3 -m deeppot compress -i .mid/water/model.dp -o .mid/water/compressed.dp 2>&1 | tail -1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
el tests
PYTHONPATH=$PWD timeout 150 python3 -m pytest -q -x tests/kernels/test_descriptor.py tests/compress/test_kernels.py \
  tests/kernels/test_scatter.py -k "evaluator or adds_the_tail or reach or fused_stage or scatter or pair_stage" \
  2>&1 | tail -2
PYTHONPATH=/tmp/site:$PWD timeout 100 python3 -m pytest -q -x tests/gpu/test_infer.py tests/gpu/test_calculator_gpu.py \
  2>&1 | tail -2
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 240 python3 benchmarks/results/run257/stage_probe.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp water=.mid/water/model64.dp \
  water=.mid/water/compressed.dp --rounds 2 --variants base tail_d all \
  2>> $OUT/run257_err2.txt | tee $OUT/run257_probe2.jsonl | cut -c1-240
tail -3 $OUT/run257_err2.txt
el accuracy
PYTHONPATH=$PWD:$PWD/benchmarks timeout 120 python3 benchmarks/results/run257/accuracy_probe.py \
  copper=.mid/copper/model.dp water=.mid/water/model.dp alloy=.mid/alloy/model.dp \
  2>> $OUT/run257_err2.txt | tee $OUT/run257_accuracy.jsonl
M="water:float32=$R/.mid/water/model.dp copper:float32=$R/.mid/copper/model.dp alloy:float32=$R/.mid/alloy/model.dp"
bench() {  # tree round
  el "bench $1 round $2"
  (cd $1 && PYTHONPATH=$PWD timeout 110 python3 $R/benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
    --sizes 98304 --precisions float32 --systems water copper alloy --modes prebuilt_nlist --compress \
    --repeat-seconds 1.0 --models $M) 2>> $OUT/run257_err2.txt | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" \
    | tee -a $OUT/run257_bench2.jsonl | grep -o '"case": "[^"]*"\|"ms_median": [0-9.]*' | tr '\n' ' '
  echo
}
[ $(( $(date +%s) - T0 )) -gt 440 ] && { el "skip bench"; exit 0; }
bench . 1; bench .old 1
[ $(( $(date +%s) - T0 )) -gt 530 ] && { el "skip round 2"; exit 0; }
bench .old 2; bench . 2
el done
