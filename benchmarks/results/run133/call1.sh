#!/bin/bash
# Run 133 (one H100): the compressed kernels on (1 atom, 4 slots, 1 warp) tiles against (1, 8, 2) (.old, HEAD~1):
# whole calls of compressed water and copper; GPU tests of the compressed and inference paths with the new tiles.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run133; mkdir -p $TMPDIR
A="--data .peer/data --inputs .peer/inputs"
for tree in .old . ; do
  env PYTHONPATH=$PWD/$tree timeout 60 python3 $tree/benchmarks/infer_bench.py $A --systems water copper \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --compress --repeat-seconds 0.3 \
    | grep compressed | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run133_infer.jsonl 2>> $OUT/run133_err.txt
done
python3 -c "
import json
for l in open('$OUT/run133_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('e_per_atom'), r.get('error', ''))"
env PYTHONPATH=$PWD timeout 100 python3 -m pytest -q -x tests/compress/test_kernels.py tests/gpu/test_infer.py > $OUT/run133_gpu_tests.txt 2>&1
tail -2 $OUT/run133_gpu_tests.txt
tail -3 $OUT/run133_err.txt
