#!/bin/bash
# Run 184: the sync-free test with its negative control (run from the repository root, no carry).
timeout 200 python3 -m pytest -q -p no:cacheprovider -rfs --tb=short tests/gpu/test_infer.py -k "no_host_sync" 2>&1 | tail -5
nvidia-smi --query-gpu=name --format=csv,noheader
