#!/bin/bash
# Session 24, call 1 (H100): run 54, the kernels visiting each neighbour block only up to its last neighbour
# (deeppot/kernels/reach.py): kernel and inference GPU tests; infer_bench water/copper/alloy 98,304 atoms, both
# precisions, compressed too, with this tree and with dd58251 (.old: the tree before, with this infer_bench for the
# alloy system) in the same call.
set -u
export PYTHONUNBUFFERED=1
timeout 200 env PYTHONPATH=$PWD:$PWD/benchmarks python3 -m pytest -q -p no:cacheprovider tests/kernels/test_descriptor.py \
    tests/compress/test_kernels.py tests/gpu/test_infer.py > $OUT/run54_gpu_tests.txt 2>&1
tail -3 $OUT/run54_gpu_tests.txt
ARGS="--systems water copper alloy --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --compress --data .peer/data --inputs .peer/inputs"
timeout 200 env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/infer_bench.py $ARGS --out $OUT/run54_infer.jsonl > /dev/null
timeout 180 env PYTHONPATH=$PWD/.old:$PWD/.old/benchmarks python3 .old/benchmarks/infer_bench.py $ARGS --out $OUT/run54_infer_before.jsonl > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run54_infer.jsonl
python3 benchmarks/infer_bench.py --summary $OUT/run54_infer_before.jsonl
