#!/bin/bash
# Run 143 (one H100): run 138's tma_probe.py ws: the TMA GEMM with and without Triton's automatic warp specialisation.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run143; mkdir -p $TMPDIR
timeout 300 python3 benchmarks/results/run138/tma_probe.py ws > $OUT/run143_probe.jsonl 2> $OUT/run143_err.txt
python3 -c "
import json
for l in open('$OUT/run143_probe.jsonl'):
    r=json.loads(l); t=r['tile']; print(r['product'][:8], r['mode'], t['BM'], t['BN'], t['BK'], t['num_warps'], t['num_stages'], r.get('ms'), r.get('dev'), r.get('error', '')[-100:])"
tail -3 $OUT/run143_err.txt
