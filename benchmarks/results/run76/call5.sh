#!/bin/bash
# Run 81 (one H100): as run 79 with the division after the products again (run 80); GPU tests; steps and the
# 10,000-step command against 7d39c1e (.old) in the same call.
set -u
export PYTHONUNBUFFERED=1
env PYTHONPATH=$PWD timeout 100 python3 benchmarks/results/run76/repro_compiled.py 2>&1 | grep -v Warn \
  > $OUT/run81_repro.txt; cat $OUT/run81_repro.txt
timeout 200 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=line tests/kernels/test_env_mat.py \
  tests/train/test_step_inputs.py tests/gpu/test_graph_step.py tests/gpu/test_force_path_gpu.py \
  > $OUT/run81_gpu_tests.txt 2>&1; tail -4 $OUT/run81_gpu_tests.txt
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
for c in water:float64:10000 copper:float32:compile water:float32:compile; do
  for tree in . .old; do
    env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks python3 $tree/$B $c | sed "s#^{#{\"tree\": \"$tree\", #" \
      >> $OUT/run81_train.jsonl 2>> $OUT/run81_err.txt
    tail -qn1 $OUT/run81_train.jsonl | cut -c1-150
  done
done
