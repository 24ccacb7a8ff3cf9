#!/bin/bash
# Run 186: run 185's tests again after fixing its two test mistakes (a CPU tensor for the GPU's Adam kernel; a
# step taken before a comparison with the eager trainer). Run from the repository root, no carry.
timeout 300 python3 -m pytest -q -p no:cacheprovider -rfs --tb=short tests/gpu/test_graph_step.py tests/kernels/test_adam.py tests/kernels/test_precision.py > $OUT/run186_gpu_tests.txt 2>&1; tail -4 $OUT/run186_gpu_tests.txt; nvidia-smi --query-gpu=name --format=csv,noheader
