#!/bin/bash
# Run 66 (one H100), at a2fb676: whether the fused kernels, now skipping padding chunks, beat the compiled PyTorch
# embedding on water under torch.compile (the rule picks PyTorch for one net a slot); copper compiled; 10,000 water
# float64 steps (whole command) new and .old (ec7074a), twice each; then the GPU tests of kernels and training steps.
set -u
export PYTHONUNBUFFERED=1
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
for c in water:float32:compile:fused water:float32:compile water:float64:compile:fused water:float64:compile; do
  env PYTHONPATH=$PWD:$PWD/benchmarks python3 $B $c >> $OUT/run66_train.jsonl 2>> $OUT/run66_err.txt
  tail -qn1 $OUT/run66_train.jsonl | cut -c1-130
done
for tree in . .old . .old; do  # twice each, alternating: the first run of a tree compiles its Triton kernels
  env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks python3 $tree/$B water:float64:10000 \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run66_10000.jsonl 2>> $OUT/run66_err.txt
  tail -qn1 $OUT/run66_10000.jsonl | cut -c1-130
done
timeout 240 env PYTHONPATH=$PWD:$PWD/benchmarks python3 -m pytest -q -p no:cacheprovider tests/kernels/test_embedding.py \
    tests/model/test_slots.py tests/gpu > $OUT/run66_gpu_tests.txt 2>&1
tail -3 $OUT/run66_gpu_tests.txt
