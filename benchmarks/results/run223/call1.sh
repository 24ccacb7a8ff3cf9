#!/bin/bash
# Run 223: the graphed calls take the box's inverse from the host; GPU tests of inference, the calculator and MD;
# min_rows.py (where the fitting nets' fused products start to pay); run 222's call_steps.py on this tree and on
# 95cd098 (.old), alternating, water float32 192, 12,288 and 98,304 atoms. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 260 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_infer.py tests/infer \
  tests/gpu/test_calculator_gpu.py tests/gpu/test_md_gpu.py tests/nlist 2>&1 | tail -3 | tee $OUT/run223_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
PYTHONPATH=$PWD:$PWD/benchmarks timeout 90 python3 benchmarks/results/run223/min_rows.py 2>&1 | grep -v Warn \
  | tee $OUT/run223_min_rows.txt
P=$ROOT/benchmarks/results/run222/call_steps.py
for round in 1 2; do
  for tree in . .old; do
    for reps in 8 4 1; do
      (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks timeout 60 python3 $P float32 $reps 2>&1 | grep atoms \
        | sed "s|^|$tree r$round |" | tee -a $OUT/run223_call_steps.txt)
    done
  done
  echo "== round $round $(( $(date +%s) - T0 )) s"
done
nvidia-smi --query-gpu=name --format=csv,noheader
