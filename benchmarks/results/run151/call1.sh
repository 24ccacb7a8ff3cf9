#!/bin/bash
# Run 151 (one H100): the kernels' tanh without libdevice's exp or IEEE division (deeppot/kernels/activation.py,
# this tree) against 675df9d (.old): GPU kernel tests; the atom-tile kernels alone (tanh_kernels.py); whole calls
# (infer_bench.py, water 98,304 atoms float32 and float64, compressed too), one round a tree.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run151; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=benchmarks/results/run151
el gpu tests
timeout 200 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/kernels/test_activation.py \
  tests/kernels/test_descriptor.py tests/kernels/test_embedding.py tests/kernels/test_fitting.py > $OUT/run151_gpu_tests.txt 2>&1
tail -3 $OUT/run151_gpu_tests.txt
el kernels
for tree in . .old; do
  timeout 90 env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks python3 $R/tanh_kernels.py $tree $TMPDIR \
    >> $OUT/run151_kernels.jsonl 2>> $OUT/run151_err.txt
done
python3 $R/tanh_kernels.py --compare $TMPDIR . .old >> $OUT/run151_kernels.jsonl 2>> $OUT/run151_err.txt
cat $OUT/run151_kernels.jsonl
el infer
A="--data .peer/data --inputs .peer/inputs"
for tree in . .old; do
  timeout 130 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --compress --repeat-seconds 0.5 \
    | sed "s#^{#{\"tree\": \"$tree\", \"round\": 1, #" >> $OUT/run151_infer.jsonl 2>> $OUT/run151_err.txt
done
python3 -c "
import json
for l in open('$OUT/run151_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('round'), r.get('case'), r.get('path'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('e_per_atom'), r.get('error', ''))"
tail -5 $OUT/run151_err.txt
el done
