#!/bin/bash
# Run 181: each chunk's centres by type made once per neighbour data (no host sync in a repeated evaluation)
# against 3f23569 (.old): GPU tests of the changed paths (the sync-free check included); whole calls of water and
# the alloy (2 and 3 types), both precisions, compressed too, trees alternating twice; the timeline of run 180
# for float32 on this tree. Run from the repository root with carry [".peer", ".old", ".whl"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el gpu tests
timeout 230 env PYTHONPATH=$PWD:/tmp/site python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/gpu/test_infer.py tests/gpu/test_md_gpu.py tests/kernels/test_descriptor.py tests/compress/test_kernels.py \
  > $OUT/run181_gpu_tests.txt 2>&1
tail -3 $OUT/run181_gpu_tests.txt
el infer
A="--data .peer/data --inputs .peer/inputs"
for tree in . .old . .old; do
  timeout 70 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water alloy \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 --compress \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run181_infer.jsonl 2>> $OUT/run181_err.txt
  el "$tree"
done
python3 -c "
import json
for l in open('$OUT/run181_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('ms_median'), r.get('ms_min'), r.get('atom_steps_per_s'), r.get('e_per_atom'), r.get('error', ''))"
el timeline
mkdir -p /tmp/prof
timeout 60 env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/results/run180/timeline.py /tmp/prof float32 \
  > $OUT/run181_timeline.txt 2>> $OUT/run181_err.txt
grep "^==\|gaps" $OUT/run181_timeline.txt
el done
nvidia-smi --query-gpu=name --format=csv,noheader
tail -3 $OUT/run181_err.txt
