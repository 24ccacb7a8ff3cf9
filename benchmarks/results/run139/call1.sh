#!/bin/bash
# Run 139 (one H100): run 138's tma_probe.py with column tiles of 256 (the whole 240-wide layer in one tile).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run139; mkdir -p $TMPDIR
timeout 300 python3 benchmarks/results/run138/tma_probe.py wide > $OUT/run139_probe.jsonl 2> $OUT/run139_err.txt
python3 -c "
import json
for l in open('$OUT/run139_probe.jsonl'):
    r=json.loads(l); t=r['tile']; print(r['product'][:8], r['mode'], t['BM'], t['BN'], t['BK'], t['num_warps'], t['num_stages'], r.get('ms'), r.get('dev'), r.get('error', '')[-100:])"
tail -3 $OUT/run139_err.txt
