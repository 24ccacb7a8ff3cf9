#!/bin/bash
# Run 96: debugging the captured gradient table (one graph), then compute-sanitizer on it
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 60 python3 benchmarks/results/run95/debug_capture.py 2>&1 | tail -20
which compute-sanitizer && timeout 120 compute-sanitizer --print-limit 5 python3 benchmarks/results/run95/debug_capture.py 2>&1 | head -60
