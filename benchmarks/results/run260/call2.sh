#!/bin/bash
# Run 260 call 2 (one GPU): the GPU tests of the final tree (b5d39a8's deeppot/) before issues 9 and 10 are closed:
# tests/gpu whole (ASE from the carried wheel), then the kernel and compressed-kernel tests on CUDA.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
el gpu
PYTHONPATH=/tmp/site:$PWD:$PWD/tests timeout 280 python3 -m pytest -q -rfEs -p no:cacheprovider tests/gpu \
  > $OUT/run260_gpu_tests.txt 2>&1
tail -4 $OUT/run260_gpu_tests.txt
el kernels
PYTHONPATH=/tmp/site:$PWD:$PWD/tests timeout 240 python3 -m pytest -q -rfE -p no:cacheprovider \
  tests/compress/test_kernels.py tests/kernels/test_scatter.py tests/kernels/test_descriptor.py \
  tests/kernels/test_fitting.py > $OUT/run260_kernel_tests.txt 2>&1
tail -4 $OUT/run260_kernel_tests.txt
el done
