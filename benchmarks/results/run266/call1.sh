#!/bin/bash
# Run 266 call 1 (one GPU, ~5 minutes; carry .mid and .peer): the T kernel's last layer and contraction
# transposed (`atom_tiles.TRANSPOSED_T`): whole calls both ways (transposed_ab.py: water, copper, the alloy), the
# descriptor kernels' tests on CUDA (both ways, the weights held by TMA); then, with it switched on in this copy of
# the tree, issue 9's prebuilt-list rows and tests/gpu/test_infer.py.
source benchmarks/results/call_prelude.sh
el whole calls
PYTHONPATH=$PWD:$PWD/benchmarks timeout 150 python3 benchmarks/results/run266/transposed_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 2 --calls 10 \
  2>> $OUT/run266_err1.txt | tee $OUT/run266_ab1.jsonl | cut -c1-240
el descriptor tests
PYTHONPATH=$PWD:$PWD/tests timeout 150 python3 -m pytest -q -x tests/kernels/test_descriptor.py \
  -k "transposed or f16x3 or holding or atom_tiles or prescaled" 2>&1 \
  | tee $OUT/run266_desc_tests1.txt | tail -3
el switched on
sed -i 's/^TRANSPOSED_T = False$/TRANSPOSED_T = True/' deeppot/kernels/atom_tiles.py
grep -n "^TRANSPOSED_T" deeppot/kernels/atom_tiles.py
M="water:float32=.mid/water/model.dp copper:float32=.mid/copper/model.dp alloy:float32=.mid/alloy/model.dp"
PYTHONPATH=$PWD timeout 120 python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
  --sizes 98304 --precisions float32 --systems water copper alloy --modes prebuilt_nlist \
  --repeat-seconds 1.0 --models $M --out $OUT/run266_bench1.jsonl 2>> $OUT/run266_err1.txt > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run266_bench1.jsonl
el gpu tests
PYTHONPATH=$PWD:$PWD/tests timeout 90 python3 -m pytest -q -x tests/gpu/test_infer.py 2>&1 \
  | tee $OUT/run266_gpu_tests1.txt | tail -3
el done
