#!/bin/bash
# Run 138 (one H100): tma_probe.py, the fitting products' GEMM with pointer loads (masked along k or not) against
# TMA tensor descriptors.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run138; mkdir -p $TMPDIR
timeout 300 python3 benchmarks/results/run138/tma_probe.py > $OUT/run138_probe.jsonl 2> $OUT/run138_err.txt
python3 -c "
import json
for l in open('$OUT/run138_probe.jsonl'):
    r=json.loads(l); t=r['tile']; print(r['product'][:8], r['mode'], t['BM'], t['BN'], t['BK'], t['num_warps'], t['num_stages'], r.get('ms'), r.get('dev'), r.get('error', '')[-100:])"
tail -3 $OUT/run138_err.txt
