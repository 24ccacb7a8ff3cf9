#!/bin/bash
# Run 249 call 4 (one GPU): this tree (equal chunks, the fused stage's smaller memory estimate, no gather of
# dE/dD for one type) against .old (f798e1b), trained models, eval and prebuilt_nlist, two rounds alternating; water
# at 1,119,744 atoms in both trees (time and peak); Chrome traces of eval calls (water, copper) to find where the
# host keeps the GPU waiting; GPU tests of the touched paths.
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
    (cd $t && PYTHONPATH=$PWD timeout 110 python3 $R/benchmarks/infer_bench.py --data .peer/data \
      --inputs .peer/inputs --sizes 98304 --precisions float32 --systems water copper alloy \
      --modes eval prebuilt_nlist --repeat-seconds 1.0 --models $M) 2>> $OUT/run249_err4.txt \
      | sed "s/^{/{\"tree\": \"$t\", /" | tee -a $OUT/run249_call4.jsonl \
      | grep -o '"case": "[^"]*"\|"mode": "[^"]*"\|"ms_median": [0-9.]*\|"peak_mem_MiB": [0-9.]*' | tr '\n' ' '
    echo
  done
done
for t in . .old; do
  el "1M water $t"
  (cd $t && PYTHONPATH=$PWD timeout 120 python3 $R/benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
    --sizes 1000000 --precisions float32 --systems water --modes eval --repeat-seconds 1.0 --min-calls 3) \
    2>> $OUT/run249_err4.txt | sed "s/^{/{\"tree\": \"$t\", /" | tee -a $OUT/run249_1m_call4.jsonl \
    | grep -o '"case": "[^"]*"\|"ms_median": [0-9.]*\|"peak_mem_MiB": [0-9.]*' | tr '\n' ' '
  echo
done
el traces
mkdir -p $OUT/traces
PYTHONPATH=$PWD timeout 100 python3 benchmarks/results/run249/profile_probe.py water=.mid/water/model.dp \
  copper=.mid/copper/model.dp --natoms 98304 --trace $OUT/traces > $OUT/run249_profile_call4.txt 2>&1
grep "^##" $OUT/run249_profile_call4.txt
gzip $OUT/traces/*.json
el tests
PYTHONPATH=/tmp/site:$PWD timeout 170 python3 -m pytest -q tests/gpu/test_force_path_gpu.py tests/gpu/test_infer.py \
  tests/model > $OUT/run249_gpu_tests4.txt 2>&1
tail -4 $OUT/run249_gpu_tests4.txt
el done
