#!/bin/bash
# Run 271, call 1 (~7 minutes; carry .mid and .peer), prepared in run 270: the tests of dE/dT made straight from
# the fitting gradient on CUDA, `gz_ab.py` (water, copper and the alloy, two rounds), run 270's `index_ab.py` on water
# (the final tree's back-to-back number), then issue 9's ~1e6-atom water row.
source benchmarks/results/call_prelude.sh
el tests
PYTHONPATH=$PWD:$PWD/tests timeout 100 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_descriptor_matrix.py \
  tests/kernels/test_fitting_stack.py -k "fitting_gradient or straight or t_bar" 2>&1 | tee $OUT/run271_tests1.txt | tail -3
el gz
PYTHONPATH=$PWD:$PWD/benchmarks timeout 220 python3 benchmarks/results/run271/gz_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 2 --calls 20 \
  2>> $OUT/run271_err1.txt | tee $OUT/run271_gz1.jsonl | cut -c1-400
el index
PYTHONPATH=$PWD:$PWD/benchmarks timeout 60 python3 benchmarks/results/run270/index_ab.py \
  water=.mid/water/model.dp --rounds 2 --calls 20 2>> $OUT/run271_err1.txt | tee $OUT/run271_index1.jsonl | cut -c1-300
el bench
PYTHONPATH=$PWD timeout 70 python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
  --sizes 1000000 --precisions float32 --systems water --modes prebuilt_nlist --repeat-seconds 1.0 \
  --models water:float32=.mid/water/model.dp --out $OUT/run271_bench1.jsonl 2>> $OUT/run271_err1.txt > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run271_bench1.jsonl
el done
