#!/bin/bash
# Run 60 (one H100): training lists trimmed to the data's most neighbours plus one stand-in slot per block
# (deeppot/model/slots.py), against the tree before (.old = 459715e) in the same call: GPU tests of the training
# kernels and steps, then train_bench 1000 steps per case (default path: timed embedding choice, CUDA graph),
# new and old, and the compiled water float64 step, new and old.
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
for c in alloy:float32 water:float64 water:float32 copper:float32 water:float64:compile; do
  env PYTHONPATH=$PWD:$PWD/benchmarks python3 $B $c >> $OUT/run60_train.jsonl 2>> $OUT/run60_err.txt
  env PYTHONPATH=$PWD/.old:$PWD/.old/benchmarks python3 .old/$B $c >> $OUT/run60_train_before.jsonl 2>> $OUT/run60_err.txt
  tail -qn1 $OUT/run60_train.jsonl $OUT/run60_train_before.jsonl | cut -c1-110
done
timeout 200 env PYTHONPATH=$PWD:$PWD/benchmarks python3 -m pytest -q -p no:cacheprovider tests/model/test_slots.py \
    tests/kernels/test_embedding.py tests/gpu/test_graph_step.py tests/gpu/test_force_path_gpu.py \
    > $OUT/run60_gpu_tests.txt 2>&1
tail -3 $OUT/run60_gpu_tests.txt
grep -h "neighbour lists of" $OUT/run60_err.txt | sort | uniq -c | cut -c1-200
