#!/bin/bash
# Not run as written: with 308 s of device time left, call 3 ran as two inline commands on one H100 (the results
# README says which): tests/gpu/test_infer.py and the pair-data and evaluator kernel tests, then, on the warm
# machine, tests/gpu's MD and tools files. index_ab.py did not run.
# Run 270, call 3 (~6.5 minutes; carry .mid, .peer and .whl), on the final tree (int32 owners and types; the fold, the
# rows in the pair data and the two-warp scatter removed): the tests call 2's 270 s cut off (tests/gpu's MD and
# tools files), test_infer.py (the evaluator's plumbing changed), the pair-data, scatter and evaluator kernel tests
# on CUDA, then int64 against int32 back to back (`index_ab.py`, water, two rounds). Cut from ~8 minutes (with
# copper in the A/B and the ~1e6-atom row) when failed starts left too little device time.
source benchmarks/results/call_prelude.sh
el gpu tests
PYTHONPATH=/tmp/site:$PWD:$PWD/tests timeout 210 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_md_gpu.py \
  tests/gpu/test_tools_gpu.py tests/gpu/test_infer.py 2>&1 | tee $OUT/run270_gpu_tests3.txt | tail -4
el kernel tests
PYTHONPATH=$PWD:$PWD/tests timeout 100 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_pairs.py \
  tests/kernels/test_scatter.py tests/kernels/test_descriptor.py -k "pair_data or scatter or evaluator_by_type" 2>&1 \
  | tee $OUT/run270_kernel_tests3.txt | tail -3
el index
PYTHONPATH=$PWD:$PWD/benchmarks timeout 70 python3 benchmarks/results/run270/index_ab.py \
  water=.mid/water/model.dp --rounds 2 --calls 20 \
  2>> $OUT/run270_err3.txt | tee $OUT/run270_index3.jsonl | cut -c1-300
el done
