#!/bin/bash
# Run 144 (one H100): "f16x3" products (three float16 products of split operands) against Triton's tf32x3 and one
# TF32 pass: the fitting products alone, then the uncompressed atom-tile embedding kernels alone (f16_probe.py).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run144; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
P="env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/results/run144/f16_probe.py"
el gemm
timeout 240 $P gemm > $OUT/run144_gemm.jsonl 2>> $OUT/run144_err.txt
python3 -c "
import json
for l in open('$OUT/run144_gemm.jsonl'):
    r=json.loads(l); t=r['tile']; print(r['product'][:8], r['precision'], t['BM'], t['BN'], t['BK'], t['num_warps'], r.get('ms'), r.get('dev'), r.get('error','')[:80])"
el tiles
timeout 300 $P tiles t:4,16,4 t:8,8,4 t:2,16,4 grad:8,8,4 grad:4,16,4 grad:4,8,4 > $OUT/run144_tiles.jsonl 2>> $OUT/run144_err.txt
cat $OUT/run144_tiles.jsonl
tail -5 $OUT/run144_err.txt
el done
