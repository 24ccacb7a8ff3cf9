#!/bin/bash
# Run 268, call 3 (~9 minutes; carry .mid and .peer), the next session's first call: the changed pair-data tests
# on CUDA, the pair-data A/B (`pairs_ab.py`: water, copper and the alloy, whose 240 slots a centre the rows may
# cost more than they save) and the scatter's warps (`scatter_ab.py`: water and copper), two rounds each,
# tests/gpu/test_infer.py (the evaluator on its default path, which changed only in its plumbing), then the tile A/B
# (`run267/tile_ab.py`) on water, two rounds, as far as the device time lasts.
source benchmarks/results/call_prelude.sh
el kernel tests
PYTHONPATH=$PWD:$PWD/tests timeout 90 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_pairs.py \
  tests/kernels/test_descriptor.py -k "pair_data or evaluator_by_type" 2>&1 \
  | tee $OUT/run268_kernel_tests3.txt | tail -3
el pairs
PYTHONPATH=$PWD:$PWD/benchmarks timeout 170 python3 benchmarks/results/run268/pairs_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 2 --calls 20 \
  2>> $OUT/run268_err3.txt | tee $OUT/run268_pairs3.jsonl | cut -c1-400
el scatter
PYTHONPATH=$PWD:$PWD/benchmarks timeout 70 python3 benchmarks/results/run268/scatter_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp --rounds 2 --calls 20 \
  2>> $OUT/run268_err3.txt | tee $OUT/run268_scatter3.jsonl | cut -c1-400
el infer tests
PYTHONPATH=$PWD:$PWD/tests timeout 90 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_infer.py 2>&1 \
  | tee $OUT/run268_infer_tests3.txt | tail -3
el tiles
PYTHONPATH=$PWD:$PWD/benchmarks timeout 100 python3 benchmarks/results/run267/tile_ab.py \
  water=.mid/water/model.dp --rounds 2 --calls 10 \
  2>> $OUT/run268_err3.txt | tee $OUT/run268_tiles3.jsonl | cut -c1-300
el done
