#!/bin/bash
# Run 91 (one H100): more float64 tiles of 8 warps for both embedding kernels (the gradient stacked).
set -u
export PYTHONUNBUFFERED=1
env PYTHONPATH=$PWD:$PWD/benchmarks timeout 500 python3 benchmarks/atom_tiles_sweep.py --precision float64 \
  --tiles 2,16,8 4,16,8 2,32,8 4,8,8 1,32,8 2,16,4 1,16,4 1,32,4 4,8,4 2>>$OUT/run91_err.txt \
  | tee -a $OUT/run91_tiles.jsonl | python3 -c "
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print(r.get('kernel'), r.get('atoms'), r.get('slots'), r.get('warps'), r.get('t_ms_reach'), r.get('grad_ms_reach'),
          r.get('whole_ms'), r.get('tiles'), r.get('error', '')[:200], flush=True)"
