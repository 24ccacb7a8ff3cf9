#!/bin/bash
# Run 268, call 2 (~8 minutes; carry .mid, .peer and .whl): what run 267's call4.sh was for, on this tree: MD of
# 98,304 water atoms (ASE from the prelude's /tmp/site), issue 9's ~1e6-atom water row, the
# changed pair-data tests on CUDA, then all of tests/gpu.
source benchmarks/results/call_prelude.sh
el md
PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/md_bench.py --sizes 98304 --dtype float32 \
  --model .mid/water/model.dp --steps 100 --warmup 20 2>> $OUT/run268_err2.txt | tee $OUT/run268_md2.jsonl
el bench
PYTHONPATH=$PWD timeout 80 python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
  --sizes 1000000 --precisions float32 --systems water --modes prebuilt_nlist --repeat-seconds 1.0 \
  --models water:float32=.mid/water/model.dp --out $OUT/run268_bench2.jsonl 2>> $OUT/run268_err2.txt > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run268_bench2.jsonl
el kernel tests
PYTHONPATH=$PWD:$PWD/tests timeout 90 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_pairs.py \
  tests/kernels/test_descriptor.py -k "pair_data or evaluator_by_type" 2>&1 | tee $OUT/run268_kernel_tests2.txt | tail -3
el gpu tests
PYTHONPATH=/tmp/site:$PWD:$PWD/tests timeout 270 python3 -m pytest -q tests/gpu 2>&1 \
  | tee $OUT/run268_gpu_tests2.txt | tail -4
el done
