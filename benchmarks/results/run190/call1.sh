#!/bin/bash
# Run 190: dc8f37c (every CUDA-graph capture with the garbage collector off) and 0f8aaa1 (one type_groups helper)
# on a GPU for the first time: run 189's flaky selection three times, then every GPU test; then where a water
# float32 training step goes (profile) and today's step times. Carry [".whl", ".peer"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site
T0=$(date +%s)
for i in 1 2 3; do
  timeout 100 python3 -m pytest -q -p no:cacheprovider -rf --tb=line \
    tests/gpu/test_graph_step.py tests/kernels/test_adam.py tests/kernels/test_precision.py 2>&1 | tail -2
done
echo "== trio $(( $(date +%s) - T0 )) s"
timeout 300 python3 -m pytest -q -p no:cacheprovider -rfs --tb=short tests/gpu > $OUT/run190_gpu_tests.txt 2>&1
tail -5 $OUT/run190_gpu_tests.txt
echo "== gpu tests $(( $(date +%s) - T0 )) s"
timeout 60 python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --profile water:float32 \
  > $OUT/run190_profile_water_f32.txt 2>&1
head -45 $OUT/run190_profile_water_f32.txt
timeout 100 python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000 \
  water:float32 water:float32:compile > $OUT/run190_train.jsonl 2>&1
cut -c1-300 $OUT/run190_train.jsonl
echo "== $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
