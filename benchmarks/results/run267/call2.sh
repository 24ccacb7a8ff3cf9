#!/bin/bash
# Run 267 call 2 (one GPU, ~3 minutes; carry .mid and .peer): the alloy's whole calls six ways, then the transposed T
# switched on in this copy of the tree: issue 9's prebuilt-list rows and tests/gpu/test_infer.py.
source benchmarks/results/call_prelude.sh
el alloy
PYTHONPATH=$PWD:$PWD/benchmarks timeout 150 python3 benchmarks/results/run267/ahead_ab.py \
  alloy=.mid/alloy/model.dp --rounds 2 --calls 10 2>> $OUT/run267_err2.txt | tee $OUT/run267_ab2.jsonl | cut -c1-300
el switched on
sed -i 's/^TRANSPOSED_T = False$/TRANSPOSED_T = True/' deeppot/kernels/atom_tiles.py
M="water:float32=.mid/water/model.dp copper:float32=.mid/copper/model.dp alloy:float32=.mid/alloy/model.dp"
PYTHONPATH=$PWD timeout 100 python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
  --sizes 98304 --precisions float32 --systems water copper alloy --modes prebuilt_nlist \
  --repeat-seconds 1.0 --models $M --out $OUT/run267_bench2.jsonl 2>> $OUT/run267_err2.txt > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run267_bench2.jsonl
el gpu tests
PYTHONPATH=$PWD:$PWD/tests timeout 80 python3 -m pytest -q -x tests/gpu/test_infer.py 2>&1 \
  | tee $OUT/run267_gpu_tests2.txt | tail -3
el done
