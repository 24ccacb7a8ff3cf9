#!/bin/bash
# Run 72 (one H100): after the stacked compiled embedding and the packed gathers: profiles of the compiled copper and
# water float32 steps (where the rest goes), 10,000 water float64 steps as one command, new and 41bba67 (.old)
# (after a 1000-step warm-up of each tree, which compiles its Triton kernels), and the GPU tests of kernels,
# inference, the kernel choice and ensembles.
set -u
export PYTHONUNBUFFERED=1
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
for c in copper:float32:compile water:float32:compile; do
  name=$(echo $c | cut -d: -f1)
  env PYTHONPATH=$PWD:$PWD/benchmarks python3 $B --profile $c > $OUT/run72_profile_$name.txt 2>&1
  grep -v -i "warn" $OUT/run72_profile_$name.txt | grep -A34 "^profile of" | cut -c1-120
done
for tree in . .old . .old; do
  c=water:float64:10000; [ -f $OUT/warm$tree ] || c=water:float64; touch $OUT/warm$tree
  env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks python3 $tree/$B $c | sed "s#^{#{\"tree\": \"$tree\", #" \
    >> $OUT/run72_10000.jsonl 2>> $OUT/run72_err.txt
  tail -qn1 $OUT/run72_10000.jsonl | cut -c1-150
done
rm -f $OUT/warm*
timeout 230 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider tests/kernels tests/gpu/test_infer.py \
  tests/gpu/test_kernel_choice_gpu.py tests/gpu/test_ensemble_gpu.py > $OUT/run72_gpu_tests.txt 2>&1
tail -2 $OUT/run72_gpu_tests.txt
