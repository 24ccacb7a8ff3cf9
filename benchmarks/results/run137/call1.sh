#!/bin/bash
# Run 137 (one H100): presplit_probe.py, the fitting products' GEMM with W split into TF32 parts once beforehand
# against Triton's tf32x3 (both operands split in the kernel) and one TF32 pass.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run137; mkdir -p $TMPDIR
timeout 300 python3 benchmarks/results/run137/presplit_probe.py > $OUT/run137_probe.jsonl 2> $OUT/run137_err.txt
python3 -c "
import json
for l in open('$OUT/run137_probe.jsonl'):
    r=json.loads(l); t=r['tile']; print(r['product'][:8], r['mode'], t['BM'], t['BN'], t['BK'], t['num_warps'], t['num_stages'], r.get('ms'), r.get('dev'), r.get('error', '')[:80])"
tail -3 $OUT/run137_err.txt
