#!/bin/bash
# Run 257 call 3 (one GPU): the compressed T kernel adding the tail and writing D itself (as the atom tiles' since
# call 1): the compressed kernels' GPU tests, then stage_probe.py (call 2's tree / the tail alone / tail and D) on
# trained water, copper and the alloy compressed, and water uncompressed once more.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
for s in water copper alloy; do
  python3 -m deeppot compress -i .mid/$s/model.dp -o .mid/$s/compressed.dp 2>&1 | tail -1
done
el tests
PYTHONPATH=$PWD timeout 120 python3 -m pytest -q -x tests/compress/test_kernels.py \
  tests/kernels/test_descriptor.py -k "adds_the_tail or evaluator or pair_stage" 2>&1 | tail -2
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 240 python3 benchmarks/results/run257/stage_probe.py \
  water=.mid/water/compressed.dp copper=.mid/copper/compressed.dp alloy=.mid/alloy/compressed.dp \
  water=.mid/water/model.dp --rounds 2 --variants call2 ctail all \
  2>> $OUT/run257_err3.txt | tee $OUT/run257_probe3.jsonl | cut -c1-200
tail -3 $OUT/run257_err3.txt
el done
