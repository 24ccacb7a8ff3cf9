#!/bin/bash
# Run 71 (one H100): the stacked embedding GEMMs only under torch.compile (eager keeps value and tangent apart;
# both take the first layer as a broadcast) and the batch's labels and flags as two gathers instead of ten, against
# 41bba67 (.old) in the same call: compiled water/copper, the PyTorch embedding eager (:plain), the default water
# float64 step; where a display step's time goes (diag_loop.py); GPU tests of the force path and graphed steps.
set -u
export PYTHONUNBUFFERED=1
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
run() {  # tree case
  env PYTHONPATH=$PWD/$1:$PWD/$1/benchmarks python3 $1/$B $2 | sed "s#^{#{\"tree\": \"$1\", #" >> $OUT/run71_train.jsonl 2>> $OUT/run71_err.txt
  tail -qn1 $OUT/run71_train.jsonl | cut -c1-150
}
for c in water:float32:compile copper:float32:compile water:float64 water:float64:plain water:float32:plain \
         copper:float32:plain water:float32:odd:plain; do
  run . $c; run .old $c
done
env PYTHONPATH=$PWD python3 benchmarks/results/run69/diag_loop.py water:float64 > $OUT/run71_diag_loop.txt 2>&1
grep -v -i warn $OUT/run71_diag_loop.txt | tail -6
timeout 150 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider tests/gpu/test_force_path_gpu.py \
  tests/gpu/test_graph_step.py > $OUT/run71_gpu_tests.txt 2>&1; tail -2 $OUT/run71_gpu_tests.txt
