#!/bin/bash
# Run 77 (one H100): the environment-matrix kernel (eager steps), pair_grad from precomputed radial factors, the
# step's inputs in one copy; against 7d39c1e (.old) in the same call. GPU tests first.
set -u
export PYTHONUNBUFFERED=1
timeout 150 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider tests/kernels/test_env_mat.py \
  tests/train/test_step_inputs.py tests/gpu/test_graph_step.py tests/gpu/test_force_path_gpu.py \
  tests/model/test_analytic.py > $OUT/run77_gpu_tests.txt 2>&1; tail -3 $OUT/run77_gpu_tests.txt
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
for c in water:float64 copper:float32:compile water:float32:compile water:float32 copper:float32; do
  for tree in . .old; do
    env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks python3 $tree/$B $c | sed "s#^{#{\"tree\": \"$tree\", #" \
      >> $OUT/run77_train.jsonl 2>> $OUT/run77_err.txt
    tail -qn1 $OUT/run77_train.jsonl | cut -c1-150
  done
done
