#!/bin/bash
# Run 187 (as run 186): the training-graph tests, FlatAdam and the weight-parts tests, after mark_updated moved
# from every step to the end of Trainer.run. Run from the repository root, no carry.
timeout 300 python3 -m pytest -q -p no:cacheprovider -rfs --tb=short tests/gpu/test_graph_step.py tests/kernels/test_adam.py tests/kernels/test_precision.py > $OUT/run187_gpu_tests.txt 2>&1; tail -3 $OUT/run187_gpu_tests.txt; nvidia-smi --query-gpu=name --format=csv,noheader
