#!/bin/bash
# Run 165: run 164's change (the atom-tile gradient's way back in `back_to_pairs`) under the GPU tests, and the
# device time of whole 98,304-atom water calls by kernel in both trees (run 128's profile; this tree against
# bd13675, .old), since run 164's wall times of water float32 disagreed with its kernel times.
# Run from the repository root with carry [".peer", ".old", ".whl"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
mkdir -p /tmp/r165
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el gpu tests
timeout 330 env PYTHONPATH=$PWD:/tmp/site python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/gpu \
  tests/compress tests/kernels/test_descriptor.py > $OUT/run165_gpu_tests.txt 2>&1
tail -4 $OUT/run165_gpu_tests.txt
el profiles
for tree in . .old; do
  echo "## tree $tree" >> $OUT/run165_kernels.txt
  timeout 100 env PYTHONPATH=$PWD/$tree python3 benchmarks/results/run128/infer_kernels.py /tmp/r165 \
    >> $OUT/run165_kernels.txt 2>> $OUT/run165_err.txt
done
grep -E "^##|^==|_tiled_|_back_|_compressed_" $OUT/run165_kernels.txt
el done
tail -3 $OUT/run165_err.txt
