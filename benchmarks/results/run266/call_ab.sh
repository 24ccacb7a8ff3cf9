#!/bin/bash
# Run 266, the least of call 1 (one GPU, ~3 minutes; carry .mid and .peer), for a session with little device time:
# whole calls with the T kernel plain and transposed (transposed_ab.py: water, copper), then the transposed kernel's
# tests on CUDA.
source benchmarks/results/call_prelude.sh
el whole calls
PYTHONPATH=$PWD:$PWD/benchmarks timeout 120 python3 benchmarks/results/run266/transposed_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp --rounds 2 --calls 10 \
  2>> $OUT/run266_err_ab.txt | tee $OUT/run266_ab.jsonl | cut -c1-240
el descriptor tests
PYTHONPATH=$PWD:$PWD/tests timeout 90 python3 -m pytest -q -x tests/kernels/test_descriptor.py \
  -k "transposed or holding" 2>&1 | tee $OUT/run266_desc_tests_ab.txt | tail -3
el done
