#!/bin/bash
# Run 258 call 3 (one GPU): the rest of tests/gpu on the final tree (calculator, ensembles, force paths, graphed
# steps, kernel choice, tools) and the compressed kernels' tests, after calls 1-2 ran the inference and MD ones.
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
PYTHONPATH=/tmp/site:$PWD:$PWD/tests timeout 260 python3 -m pytest -q tests/gpu/test_calculator_gpu.py \
  tests/gpu/test_ensemble_gpu.py tests/gpu/test_force_path_gpu.py tests/gpu/test_graph_step.py \
  tests/gpu/test_kernel_choice_gpu.py tests/gpu/test_tools_gpu.py tests/compress/test_kernels.py 2>&1 \
  | grep -v "^\.*$" | tail -12
