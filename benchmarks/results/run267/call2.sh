#!/bin/bash
# Run 267 call 2 (one GPU, ~5 minutes; carry .mid and .peer), on the tree with the transposed T and both kernels
# reading ahead as defaults: the descriptor kernels' tests on CUDA, the alloy's whole calls base / both reading
# ahead, issue 9's prebuilt-list rows (98,304 atoms; water also ~1e6), then tests/gpu/test_infer.py.
source benchmarks/results/call_prelude.sh
el descriptor tests
PYTHONPATH=$PWD:$PWD/tests timeout 100 python3 -m pytest -q -x tests/kernels/test_descriptor.py \
  -k "transposed or ahead or holding or prescaled" 2>&1 | tee $OUT/run267_desc_tests2.txt | tail -3
el alloy
PYTHONPATH=$PWD:$PWD/benchmarks timeout 90 python3 benchmarks/results/run267/ahead_ab.py \
  alloy=.mid/alloy/model.dp --rounds 2 --calls 10 --variants base ahead_both 2>> $OUT/run267_err2.txt \
  | tee $OUT/run267_ab2.jsonl | cut -c1-300
el bench
M="water:float32=.mid/water/model.dp copper:float32=.mid/copper/model.dp alloy:float32=.mid/alloy/model.dp"
PYTHONPATH=$PWD timeout 90 python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
  --sizes 98304 --precisions float32 --systems water copper alloy --modes prebuilt_nlist \
  --repeat-seconds 1.0 --models $M --out $OUT/run267_bench2.jsonl 2>> $OUT/run267_err2.txt > /dev/null
PYTHONPATH=$PWD timeout 60 python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
  --sizes 1000000 --precisions float32 --systems water --modes prebuilt_nlist \
  --repeat-seconds 1.0 --models $M --out $OUT/run267_bench2.jsonl 2>> $OUT/run267_err2.txt > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run267_bench2.jsonl
el gpu tests
PYTHONPATH=$PWD:$PWD/tests timeout 90 python3 -m pytest -q -x tests/gpu/test_infer.py 2>&1 \
  | tee $OUT/run267_gpu_tests2.txt | tail -3
el done
