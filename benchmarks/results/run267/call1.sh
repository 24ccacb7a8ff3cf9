#!/bin/bash
# Run 267 call 1 (one GPU, ~7 minutes; carry .mid and .peer): T transposed (`atom_tiles.TRANSPOSED_T`), the shared
# rows read a chunk ahead (`READ_AHEAD`) and the gradient's programs walking their tiles net by net (`GRAD_PER_NET`):
# whole calls six ways (ahead_ab.py: water and copper), then the descriptor kernels' tests on CUDA.
source benchmarks/results/call_prelude.sh
el whole calls
PYTHONPATH=$PWD:$PWD/benchmarks timeout 330 python3 benchmarks/results/run267/ahead_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp --rounds 2 --calls 10 \
  2>> $OUT/run267_err1.txt | tee $OUT/run267_ab1.jsonl | cut -c1-300
el descriptor tests
PYTHONPATH=$PWD:$PWD/tests timeout 100 python3 -m pytest -q -x tests/kernels/test_descriptor.py \
  -k "transposed or ahead or net_by_net or holding or prescaled" 2>&1 | tee $OUT/run267_desc_tests1.txt | tail -3
el done
