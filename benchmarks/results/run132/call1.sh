#!/bin/bash
# Run 132 (one H100): this session's inference against its start (6a055e5, .old): whole calls at ~100k atoms and
# graphed small systems; compressed tiles with one warp (compress_tiles.py); the GPU tests of the touched paths.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run132; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
A="--data .peer/data --inputs .peer/inputs"
el large
for tree in .old . ; do
  env PYTHONPATH=$PWD/$tree timeout 100 python3 $tree/benchmarks/infer_bench.py $A --systems water copper alloy \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --compress --repeat-seconds 0.5 \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run132_infer.jsonl 2>> $OUT/run132_err.txt
  env PYTHONPATH=$PWD/$tree timeout 60 python3 $tree/benchmarks/infer_bench.py $A --systems water copper \
    --precisions float32 float64 --sizes 192 --modes graphed --compress --repeat-seconds 0.3 \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run132_infer.jsonl 2>> $OUT/run132_err.txt
done
python3 -c "
import json
for l in open('$OUT/run132_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('mode'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', ''))"
el tests
env PYTHONPATH=$PWD:/tmp/site timeout 170 python3 -m pytest -q -x tests/kernels/test_fitting.py tests/kernels/test_scatter.py \
  tests/compress tests/gpu/test_infer.py > $OUT/run132_gpu_tests.txt 2>&1
tail -3 $OUT/run132_gpu_tests.txt
el tiles
env PYTHONPATH=$PWD:$PWD/benchmarks timeout 150 python3 benchmarks/compress_tiles.py --data .peer/data --inputs .peer/inputs \
  --tiles 1,8,2 1,8,1 1,4,2 1,4,1 > $OUT/run132_tiles.jsonl 2>> $OUT/run132_err.txt
python3 -c "
import json
for l in open('$OUT/run132_tiles.jsonl'):
    r=json.loads(l); print(r['case'], r['tile'], round(r['t_ms_reach'],3), round(r['grad_ms_reach'],3), round(r['ms_per_step'],3))"
tail -5 $OUT/run132_err.txt
el done
