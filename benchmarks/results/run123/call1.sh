#!/bin/bash
# Run 123 (one H100): the training step side by side in one call: DeePMD-kit 3.2.0 (pt backend, its own "average
# training time" over 500 steps) and deeppot (this tree) default and compiled, water float64/float32, copper, alloy.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run123; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el deepmd-kit
OUT=$OUT/peer timeout 280 bash .peer/peer/deepmd_train.sh .peer/data .peer/inputs .peer/whl 500 \
  water:pt:float64 water:pt:float32 copper:pt:float32 alloy:pt:float32 > $OUT/run123_peer.txt 2>&1
cat $OUT/run123_peer.txt | grep -v "^WARNING"
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
el deeppot
for c in water:float64 water:float32 copper:float32 alloy:float32 water:float64:compile water:float32:compile \
         copper:float32:compile alloy:float32:compile; do
  env PYTHONPATH=$PWD:$PWD/benchmarks timeout 100 python3 $B --steps 1000 $c >> $OUT/run123_train.jsonl 2>> $OUT/run123_err.txt
  tail -qn1 $OUT/run123_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['case'], r.get('fused_kernels'), r.get('ms_per_step'), r.get('launch_to_first_step_s'), str(r.get('final', r.get('error', '')))[:120])"
done
el done
