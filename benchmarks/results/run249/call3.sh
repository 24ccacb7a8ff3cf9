#!/bin/bash
# Run 249 call 3 (one GPU): chunks of equal size and the fused stage's smaller memory estimate (one chunk for
# 108,000-atom copper and alloy, where the old estimate cut them into 104,857 + 3,143 and 91,929 + 16,071) against
# .old (f798e1b), trained models (.mid), eval and prebuilt_nlist, two rounds alternating; water at 1,119,744 atoms
# (fresh model) for the peak memory with the new estimate; the profile of copper and alloy in this tree; GPU tests.
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
      --modes eval prebuilt_nlist --repeat-seconds 1.0 --models $M) 2>> $OUT/run249_err.txt \
      | sed "s/^{/{\"tree\": \"$t\", /" | tee -a $OUT/run249_chunks.jsonl \
      | grep -o '"case": "[^"]*"\|"mode": "[^"]*"\|"ms_median": [0-9.]*\|"peak_mem_MiB": [0-9.]*\|"e_per_atom": [0-9.e-]*' | tr '\n' ' '
    echo
  done
done
el "1M water"
PYTHONPATH=$PWD timeout 120 python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
  --sizes 1000000 --precisions float32 --systems water --modes eval --repeat-seconds 1.0 --min-calls 3 \
  2>> $OUT/run249_err.txt | tee $OUT/run249_1m.jsonl | grep -o '"case": "[^"]*"\|"ms_median": [0-9.]*\|"peak_mem_MiB": [0-9.]*'
el profile
PYTHONPATH=$PWD timeout 100 python3 benchmarks/results/run249/profile_probe.py copper=.mid/copper/model.dp \
  alloy=.mid/alloy/model.dp --natoms 98304 > $OUT/run249_profile_chunks.txt 2>&1
grep "^##" $OUT/run249_profile_chunks.txt
el tests
PYTHONPATH=/tmp/site:$PWD timeout 150 python3 -m pytest -q tests/gpu/test_infer.py tests/infer \
  > $OUT/run249_gpu_tests.txt 2>&1
tail -4 $OUT/run249_gpu_tests.txt
el done
