#!/bin/bash
# Run 70 (one H100): the embedding nets' value and tangent stacked into one GEMM a layer, the first layer a
# broadcast (deeppot/model/analytic.py) against 41bba67 (.old) in the same call: the PyTorch embedding eager and
# graphed (:plain), the timed default, the odd shape, and the compiled water and copper steps.
set -u
export PYTHONUNBUFFERED=1
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
run() {  # tree case
  env PYTHONPATH=$PWD/$1:$PWD/$1/benchmarks python3 $1/$B $2 | sed "s#^{#{\"tree\": \"$1\", #" >> $OUT/run70_train.jsonl 2>> $OUT/run70_err.txt
  tail -qn1 $OUT/run70_train.jsonl | cut -c1-150
}
for c in water:float64:plain water:float32:plain copper:float32:plain water:float32:odd:plain; do
  run . $c; run .old $c
done
run . water:float64
for c in water:float32:compile copper:float32:compile; do
  run . $c; run .old $c
done
timeout 120 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider tests/model/test_analytic.py tests/gpu/test_force_path_gpu.py \
  > $OUT/run70_gpu_tests.txt 2>&1; tail -2 $OUT/run70_gpu_tests.txt
