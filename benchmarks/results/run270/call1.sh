#!/bin/bash
# Run 270, call 1 (~9.5 minutes; carry .mid and .peer): run 269's call1.sh (the fold's tests on CUDA, fold_ab.py on
# water, copper and the alloy) first, then run 268's pair-data and scatter A/Bs (call3.sh without the tile A/B),
# so that the machine's one start serves both; the evaluator's tests go to call 2.
source benchmarks/results/call_prelude.sh
el kernel tests
PYTHONPATH=$PWD:$PWD/tests timeout 100 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_descriptor.py \
  tests/kernels/test_fitting_stack.py tests/kernels/test_descriptor_matrix.py tests/kernels/test_pairs.py \
  -k "making_dE_dT or dE_dT_made or into_rows or when_folded or t_bar or pair_data or evaluator_by_type" 2>&1 \
  | tee $OUT/run270_kernel_tests1.txt | tail -3
el fold
PYTHONPATH=$PWD:$PWD/benchmarks timeout 130 python3 benchmarks/results/run269/fold_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 2 --calls 20 \
  2>> $OUT/run270_err1.txt | tee $OUT/run270_fold1.jsonl | cut -c1-400
el pairs
PYTHONPATH=$PWD:$PWD/benchmarks timeout 170 python3 benchmarks/results/run268/pairs_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 2 --calls 20 \
  2>> $OUT/run270_err1.txt | tee $OUT/run270_pairs1.jsonl | cut -c1-400
el scatter
PYTHONPATH=$PWD:$PWD/benchmarks timeout 70 python3 benchmarks/results/run268/scatter_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp --rounds 2 --calls 20 \
  2>> $OUT/run270_err1.txt | tee $OUT/run270_scatter1.jsonl | cut -c1-400
el done
