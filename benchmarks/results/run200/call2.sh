#!/bin/bash
# Run 200, call 2: call 1's graphed calls read image shifts that were freed after the capture (their memory was
# reused by the other DeepPot's calls, the list overflowed and every call fell back to the eager one); with the
# shifts kept with the graph: the GPU tests again and the probe. Carry [".whl", ".peer"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_infer.py tests/infer \
  tests/gpu/test_calculator_gpu.py 2>&1 | tail -15 | tee $OUT/run200_gpu_tests_2.txt
echo "== tests $(( $(date +%s) - T0 )) s"
PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 120 python3 benchmarks/results/run200/small_probe.py 2>&1 \
  | grep -v Warn | tee $OUT/run200_small_probe_2.txt
nvidia-smi --query-gpu=name --format=csv,noheader
