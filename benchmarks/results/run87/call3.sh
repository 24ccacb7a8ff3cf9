#!/bin/bash
# Run 89 (one H100): the atom-tile gradient kernel with value and tangent stacked into one GEMM a layer (twice the
# rows): GPU tests, tile sweeps in float32 and float64 against HEAD's kernels (.old) in the same call.
set -u
export PYTHONUNBUFFERED=1
timeout 200 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/kernels/test_descriptor.py > $OUT/run89_gpu_tests.txt 2>&1; tail -3 $OUT/run89_gpu_tests.txt
run() {  # tree precision tiles...
  local tree=$1 precision=$2; shift 2
  env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks timeout 200 python3 $tree/benchmarks/atom_tiles_sweep.py \
    --precision $precision --tiles "$@" 2>>$OUT/run89_err.txt | sed "s#^{#{\"tree\": \"$tree\", #" \
    | tee -a $OUT/run89_tiles.jsonl | cut -c1-300
}
run .old float32 8,8,4
run . float32 8,8,4 8,8,8 4,8,4 8,16,8 4,16,8 4,16,4
run . float64 1,16,4 2,8,4 1,16,8 2,16,8
