#!/bin/bash
# Run 258 call 2 (one GPU): after call 1, the order only for prebuilt data evaluated again and its type counts
# without a sync of its own; the gradient's tile chosen from the ordered counts (`atom_tiles.gradient_tile`). GPU
# tests (inference, MD, the order's kernels), order_probe.py on water, the alloy and copper
# (base / order / + the gradient's tile / both made every call), MD of 98,304 water atoms (md_bench.py, trained
# model) and infer_bench.py's prebuilt-list calls, this tree against .old (4d04893, the session's start).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
R=$PWD
ln -sfn $PWD/.peer .old/.peer
ln -sfn $PWD/.mid .old/.mid
python3 -m deeppot compress -i .mid/water/model.dp -o .mid/water/compressed.dp 2>&1 | tail -1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
el tests
PYTHONPATH=$PWD:$PWD/tests timeout 100 python3 -m pytest -q -x tests/kernels/test_pairs.py tests/infer/test_order.py \
  tests/kernels/test_descriptor.py -k "pair_data or order or evaluator_by_type or tile_tops or reach or gradient_tile" \
  2>&1 | tail -2
PYTHONPATH=/tmp/site:$PWD:$PWD/tests timeout 150 python3 -m pytest -q tests/gpu/test_infer.py \
  tests/gpu/test_md_gpu.py 2>&1 | grep -v "^\.*$" | tail -8
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 150 python3 benchmarks/results/run258/order_probe.py \
  water=.mid/water/model.dp alloy=.mid/alloy/model.dp copper=.mid/copper/model.dp --rounds 2 \
  --variants base order order_gt fresh_gt \
  2>> $OUT/run258_err2.txt | tee $OUT/run258_probe2.jsonl | cut -c1-200
md() {  # tree
  el "md $1"
  (cd $1 && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 $R/benchmarks/md_bench.py --sizes 98304 --dtype float32 \
    --model $R/.mid/water/model.dp --steps 100 --warmup 20) 2>> $OUT/run258_err2.txt \
    | sed "s/^{/{\"tree\": \"$1\", /" | tee -a $OUT/run258_md2.jsonl | cut -c1-400
}
md .; md .old
M="water:float32=$R/.mid/water/model.dp copper:float32=$R/.mid/copper/model.dp alloy:float32=$R/.mid/alloy/model.dp"
bench() {  # tree round
  el "bench $1 round $2"
  (cd $1 && PYTHONPATH=$PWD timeout 110 python3 $R/benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
    --sizes 98304 --precisions float32 --systems water copper alloy --modes prebuilt_nlist --compress \
    --repeat-seconds 1.0 --models $M) 2>> $OUT/run258_err2.txt | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" \
    | tee -a $OUT/run258_bench2.jsonl | grep -o '"case": "[^"]*"\|"ms_median": [0-9.]*' | tr '\n' ' '
  echo
}
[ $(( $(date +%s) - T0 )) -gt 250 ] && { el "skip bench"; exit 0; }
bench . 1; bench .old 1
[ $(( $(date +%s) - T0 )) -gt 360 ] && { el "skip round 2"; exit 0; }
bench .old 2; bench . 2
el done
