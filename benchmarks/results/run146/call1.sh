#!/bin/bash
# Run 146 (one H100): f16x3 tiles of the atom-tile kernels (f16_tiles.py) and of the fitting products with their
# epilogues (layer_tiles.py); whole float32 calls with the products' new tiles, two rounds; a kernel profile.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run146; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
A="--data .peer/data --inputs .peer/inputs"
P="env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/results/run146"
el layer tiles
timeout 120 $P/layer_tiles.py > $OUT/run146_layer.jsonl 2>> $OUT/run146_err.txt
cat $OUT/run146_layer.jsonl
el atom tiles
timeout 240 $P/f16_tiles.py t:4,16,4 t:4,16,8 t:8,16,8 t:8,8,8 t:4,32,8 grad:4,16,4 grad:4,16,4s grad:8,8,4s \
  grad:4,16,8 grad:8,8,8 grad:8,16,8 grad:4,16,8s > $OUT/run146_tiles.jsonl 2>> $OUT/run146_err.txt
cat $OUT/run146_tiles.jsonl
el infer
for round in 1 2; do
  timeout 100 env PYTHONPATH=$PWD python3 benchmarks/infer_bench.py $A --systems water copper alloy \
    --precisions float32 --sizes 98304 --modes prebuilt_nlist --compress --repeat-seconds 0.5 \
    | sed "s#^{#{\"round\": $round, #" >> $OUT/run146_infer.jsonl 2>> $OUT/run146_err.txt
done
python3 -c "
import json
for l in open('$OUT/run146_infer.jsonl'):
    r=json.loads(l); print(r.get('round'), r.get('case'), r.get('path'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('e_per_atom'), r.get('error', ''))"
el profile
env PYTHONPATH=$PWD timeout 100 python3 benchmarks/results/run128/infer_kernels.py $TMPDIR > $OUT/run146_kernels.txt 2>> $OUT/run146_err.txt
grep -A12 "^==" $OUT/run146_kernels.txt | cut -c1-40,90-
tail -5 $OUT/run146_err.txt
el done
