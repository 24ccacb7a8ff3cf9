#!/bin/bash
# Run 67 (one H100), at 6fe11c6: profiles of the compiled steps that miss issue 11's targets (water f32, copper f32)
# and of the alloy's, for where the time goes next (train_bench --profile: 10 warm-up steps, 5 profiled).
set -u
export PYTHONUNBUFFERED=1
B="env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
for c in water:float32:compile copper:float32:compile alloy:float32:compile; do
  name=$(echo $c | cut -d: -f1)
  $B --profile $c > $OUT/run67_profile_$name.txt 2>&1
  grep -v -i "warn" $OUT/run67_profile_$name.txt | grep -A28 "^profile of" | cut -c1-160
done
