#!/bin/bash
# Run 178: dE/dT inside the dE/dD product (deeppot/kernels/fitting_t_bar.py): the product and the way back alone
# at water's shapes (t_bar_probe.py), GPU tests, and device time of a 98,304-atom water call by kernel (run 128's
# infer_kernels.py), this tree against e0d39ca (.mid: the tree before it), trees alternating twice.
# Run from the repository root with carry [".peer", ".mid", ".whl"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el probe
timeout 120 env PYTHONPATH=$PWD python3 benchmarks/results/run178/t_bar_probe.py > $OUT/run178_probe.jsonl 2>> $OUT/run178_err.txt
cat $OUT/run178_probe.jsonl
el profile
mkdir -p /tmp/prof
i=0
for tree in . .mid . .mid; do
  i=$((i + 1))
  timeout 120 env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks python3 benchmarks/results/run128/infer_kernels.py /tmp/prof \
    > $OUT/run178_kernels_${i}.txt 2>> $OUT/run178_err.txt
  echo "$tree"; grep "^==" $OUT/run178_kernels_${i}.txt
done
el gpu tests
timeout 280 env PYTHONPATH=$PWD:/tmp/site python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/kernels/test_fitting.py tests/kernels/test_descriptor.py tests/gpu/test_infer.py > $OUT/run178_gpu_tests.txt 2>&1
tail -3 $OUT/run178_gpu_tests.txt
el done
tail -5 $OUT/run178_err.txt
