#!/bin/bash
# Run 270, call 3 (~6 minutes; carry .mid, .peer and .whl), on the tree with int32 owners and types by default and
# the fold and the two-warp scatter removed: the tests call 2's 270 s cut off (tests/gpu's MD and tools files),
# the pair-data, scatter and evaluator kernel tests on CUDA, then issue 9's ~1e6-atom water row.
source benchmarks/results/call_prelude.sh
el gpu tests
PYTHONPATH=/tmp/site:$PWD:$PWD/tests timeout 240 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_md_gpu.py \
  tests/gpu/test_tools_gpu.py 2>&1 | tee $OUT/run270_gpu_tests3.txt | tail -4
el kernel tests
PYTHONPATH=$PWD:$PWD/tests timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_pairs.py \
  tests/kernels/test_scatter.py tests/kernels/test_descriptor.py -k "pair_data or scatter or evaluator_by_type" 2>&1 \
  | tee $OUT/run270_kernel_tests3.txt | tail -3
el bench
PYTHONPATH=$PWD timeout 80 python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
  --sizes 1000000 --precisions float32 --systems water --modes prebuilt_nlist --repeat-seconds 1.0 \
  --models water:float32=.mid/water/model.dp --out $OUT/run270_bench3.jsonl 2>> $OUT/run270_err3.txt > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run270_bench3.jsonl
el done
