#!/bin/bash
# Run 268, call 4 (~3 minutes; carry .mid and .peer): the least of call 3 for the device time left: the changed
# pair-data tests on CUDA and the pair-data A/B on water, two rounds.
source benchmarks/results/call_prelude.sh
el kernel tests
PYTHONPATH=$PWD:$PWD/tests timeout 80 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_pairs.py \
  tests/kernels/test_descriptor.py -k "pair_data or evaluator_by_type" 2>&1 | tee $OUT/run268_kernel_tests4.txt | tail -3
el pairs
PYTHONPATH=$PWD:$PWD/benchmarks timeout 90 python3 benchmarks/results/run268/pairs_ab.py \
  water=.mid/water/model.dp --rounds 2 --calls 20 2>> $OUT/run268_err4.txt | tee $OUT/run268_pairs4.jsonl | cut -c1-400
el done
