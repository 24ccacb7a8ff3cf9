#!/bin/bash
# Run 136 (one H100): the uncompressed dE/dr_ij kernel with its four row sums as one reduction (this tree) against
# eight separate sums (.old): the kernel alone at several tiles, whole water calls; a kernel profile of this tree.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run136; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
A="--data .peer/data --inputs .peer/inputs"
el grad
S="float32:8,8,4 float32:4,16,4 float32:4,8,4 float32:2,16,4 float64:1,16,4 float64:2,8,4"
for tree in .old . ; do
  env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks timeout 100 python3 benchmarks/results/run136/grad_tiles.py $tree $S \
    >> $OUT/run136_grad.jsonl 2>> $OUT/run136_err.txt
done
cat $OUT/run136_grad.jsonl
el infer
for tree in .old . . .old ; do
  env PYTHONPATH=$PWD/$tree timeout 70 python3 $tree/benchmarks/infer_bench.py $A --systems water \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run136_infer.jsonl 2>> $OUT/run136_err.txt
done
python3 -c "
import json
for l in open('$OUT/run136_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('mode'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('e_per_atom'), r.get('error', ''))"
el profile
env PYTHONPATH=$PWD timeout 120 python3 benchmarks/results/run128/infer_kernels.py $TMPDIR > $OUT/run136_kernels.txt 2>> $OUT/run136_err.txt
grep -A16 "^==" $OUT/run136_kernels.txt | cut -c1-40,90-
el tests
env PYTHONPATH=$PWD timeout 120 python3 -m pytest -q -x tests/kernels/test_descriptor.py tests/compress/test_kernels.py \
  > $OUT/run136_gpu_tests.txt 2>&1
tail -2 $OUT/run136_gpu_tests.txt
tail -5 $OUT/run136_err.txt
el done
