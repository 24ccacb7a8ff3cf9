#!/bin/bash
# Run 166: the float32 atom-tile kernels read each slot's environment row, made once one slot a lane
# (`atom_tiles.shared_rows`, `env_rows.env_rows_once`; SASS on the CPU: T loop 3,842 -> 2,813 instructions, the
# gradient 4,509 -> 3,335), on top of run 164's way back; the compressed rows kernel finds its slots in-kernel from
# both kernels' tops. GPU tests, then whole-call device time by kernel (run 128's profile) in three trees: this one,
# 460307c (.mid: run 164's change alone) and bd13675 (.old), then wall times, this tree against .old, twice.
# Run from the repository root with carry [".peer", ".old", ".mid", ".whl"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
mkdir -p /tmp/r166
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el gpu tests
timeout 200 env PYTHONPATH=$PWD:/tmp/site python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/kernels/test_descriptor.py tests/compress/test_kernels.py tests/gpu/test_infer.py \
  > $OUT/run166_gpu_tests.txt 2>&1
tail -4 $OUT/run166_gpu_tests.txt
el profiles
for tree in . .mid .old; do
  echo "## tree $tree" >> $OUT/run166_kernels.txt
  timeout 100 env PYTHONPATH=$PWD/$tree python3 benchmarks/results/run128/infer_kernels.py /tmp/r166 \
    >> $OUT/run166_kernels.txt 2>> $OUT/run166_err.txt
done
grep -E "^##|^==|_tiled_|_back_|_rows_|_compressed_" $OUT/run166_kernels.txt
el infer
A="--data .peer/data --inputs .peer/inputs"
for tree in . .old . .old; do
  timeout 80 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water copper \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 --compress \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run166_infer.jsonl 2>> $OUT/run166_err.txt
done
python3 -c "
import json
for l in open('$OUT/run166_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', ''))"
el done
tail -3 $OUT/run166_err.txt
