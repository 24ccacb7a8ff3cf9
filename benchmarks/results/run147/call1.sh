#!/bin/bash
# Run 147 (one H100): the cost of splitting operands in the f16x3 atom-tile kernels (split_probe.py, with the
# probe's temporary _mm variants); MD steps with the new products (md_bench.py, random weights, float32).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run147; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
el split
timeout 200 env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/results/run147/split_probe.py \
  > $OUT/run147_split.jsonl 2>> $OUT/run147_err.txt
cat $OUT/run147_split.jsonl
el md
for c in "" "--compress"; do
  timeout 150 env PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site python3 benchmarks/md_bench.py --device cuda \
    --sizes 12288 98304 --dtype float32 --steps 100 --warmup 20 $c >> $OUT/run147_md.jsonl 2>> $OUT/run147_err.txt
done
python3 -c "
import json
for l in open('$OUT/run147_md.jsonl'):
    r=json.loads(l); print(r.get('case'), r.get('ms_per_step'), r.get('atom_steps_per_s'), r.get('eval_ms'), r.get('rebuilds'), r.get('peak_mem_MiB'))"
tail -3 $OUT/run147_err.txt
el done
