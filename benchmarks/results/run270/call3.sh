#!/bin/bash
# Run 270, call 3 (~8 minutes; carry .mid, .peer and .whl), on the final tree (int32 owners and types; the fold, the
# rows in the pair data and the two-warp scatter removed): int64 against int32 back to back (`index_ab.py`, water
# and copper, three rounds), the tests call 2's 270 s cut off (tests/gpu's MD and tools files), test_infer.py (the
# evaluator's plumbing changed), the pair-data, scatter and evaluator kernel tests on CUDA, then the ~1e6-atom row.
source benchmarks/results/call_prelude.sh
el index
PYTHONPATH=$PWD:$PWD/benchmarks timeout 100 python3 benchmarks/results/run270/index_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp --rounds 3 --calls 20 \
  2>> $OUT/run270_err3.txt | tee $OUT/run270_index3.jsonl | cut -c1-300
el gpu tests
PYTHONPATH=/tmp/site:$PWD:$PWD/tests timeout 240 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_md_gpu.py \
  tests/gpu/test_tools_gpu.py tests/gpu/test_infer.py 2>&1 | tee $OUT/run270_gpu_tests3.txt | tail -4
el kernel tests
PYTHONPATH=$PWD:$PWD/tests timeout 120 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_pairs.py \
  tests/kernels/test_scatter.py tests/kernels/test_descriptor.py -k "pair_data or scatter or evaluator_by_type" 2>&1 \
  | tee $OUT/run270_kernel_tests3.txt | tail -3
el bench
PYTHONPATH=$PWD timeout 70 python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
  --sizes 1000000 --precisions float32 --systems water --modes prebuilt_nlist --repeat-seconds 1.0 \
  --models water:float32=.mid/water/model.dp --out $OUT/run270_bench3.jsonl 2>> $OUT/run270_err3.txt > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run270_bench3.jsonl
el done
