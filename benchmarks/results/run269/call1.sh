#!/bin/bash
# Run 269, call 1 (~4 minutes; carry .mid and .peer), after run 268's call3.sh on the warm machine: the tests of dE/dT
# made in the gradient kernel on CUDA (`atom_tiles.FOLD_T_BAR`; the kernel's, the stage's, the fitting stack's
# dE/dD into D's rows through cuBLAS's out=), then `fold_ab.py` on water, copper and the alloy, two rounds.
source benchmarks/results/call_prelude.sh
el kernel tests
PYTHONPATH=$PWD:$PWD/tests timeout 100 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_descriptor.py \
  tests/kernels/test_fitting_stack.py tests/kernels/test_descriptor_matrix.py \
  -k "making_dE_dT or dE_dT_made or into_rows or when_folded or t_bar" 2>&1 | tee $OUT/run269_kernel_tests1.txt | tail -3
el fold
PYTHONPATH=$PWD:$PWD/benchmarks timeout 130 python3 benchmarks/results/run269/fold_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 2 --calls 20 \
  2>> $OUT/run269_err1.txt | tee $OUT/run269_fold1.jsonl | cut -c1-400
el done
