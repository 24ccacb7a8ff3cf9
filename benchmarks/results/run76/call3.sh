#!/bin/bash
# Run 79 (one H100): radial factors as three tensors (run 78: Inductor on CUDA computed wrong forces; run 80 found
# the cause: t_bar / nnei before the products); GPU tests; steps, 10,000 steps against 7d39c1e (.old).
set -u
export PYTHONUNBUFFERED=1
env PYTHONPATH=$PWD timeout 100 python3 benchmarks/results/run76/repro_compiled.py 2>&1 | grep -v Warn \
  > $OUT/run79_repro.txt; cat $OUT/run79_repro.txt
timeout 200 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=line tests/kernels/test_env_mat.py \
  tests/train/test_step_inputs.py tests/gpu/test_graph_step.py tests/gpu/test_force_path_gpu.py \
  > $OUT/run79_gpu_tests.txt 2>&1; tail -4 $OUT/run79_gpu_tests.txt
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
for c in water:float64:10000 water:float64 copper:float32:compile water:float32:compile; do
  for tree in . .old; do
    env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks python3 $tree/$B $c | sed "s#^{#{\"tree\": \"$tree\", #" \
      >> $OUT/run79_train.jsonl 2>> $OUT/run79_err.txt
    tail -qn1 $OUT/run79_train.jsonl | cut -c1-150
  done
done
