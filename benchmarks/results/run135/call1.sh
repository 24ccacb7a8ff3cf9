#!/bin/bash
# Run 135 (one H100): relaxed atomics in the force scatter (this tree) against acquire-release (HEAD, .old): whole
# inference calls and the training step; the compressed kernels with T and dE/dr on separate tiles; GPU tests.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run135; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
A="--data .peer/data --inputs .peer/inputs"
el infer
for tree in .old . . .old ; do
  env PYTHONPATH=$PWD/$tree timeout 75 python3 $tree/benchmarks/infer_bench.py $A --systems water \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --compress --repeat-seconds 0.5 \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run135_infer.jsonl 2>> $OUT/run135_err.txt
done
python3 -c "
import json
for l in open('$OUT/run135_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('mode'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('e_per_atom'), r.get('error', ''))"
el tiles
env PYTHONPATH=$PWD:$PWD/benchmarks timeout 120 python3 benchmarks/results/run135/tiles_whole.py $A \
  > $OUT/run135_tiles.jsonl 2>> $OUT/run135_err.txt
cat $OUT/run135_tiles.jsonl
el train
for tree in .old . ; do
  env PYTHONPATH=$PWD/$tree timeout 70 python3 $tree/benchmarks/train_bench.py $A --steps 1000 water:float32 \
    | grep '"case"' | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run135_train.jsonl 2>> $OUT/run135_err.txt
done
cat $OUT/run135_train.jsonl
el tests
env PYTHONPATH=$PWD timeout 150 python3 -m pytest -q -x tests/kernels/test_scatter.py tests/compress/test_kernels.py \
  tests/gpu/test_infer.py tests/gpu/test_force_path_gpu.py > $OUT/run135_gpu_tests.txt 2>&1
tail -3 $OUT/run135_gpu_tests.txt
tail -5 $OUT/run135_err.txt
el done
