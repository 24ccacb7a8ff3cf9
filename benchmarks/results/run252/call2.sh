#!/bin/bash
# Run 252 call 2 (one GPU): the float32 atom tiles with and without PRESCALED against a float64 evaluation
# (accuracy_probe.py), then where trained models' calls go now (run 249's profile_probe.py), water uncompressed and
# compressed, copper.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el accuracy
PYTHONPATH=$PWD:$PWD/benchmarks timeout 200 python3 benchmarks/results/run252/accuracy_probe.py \
  copper=.mid/copper/model.dp water=.mid/water/model.dp alloy=.mid/alloy/model.dp --natoms 98304 \
  2>> $OUT/run252_err2.txt | tee $OUT/run252_accuracy.jsonl
el profile
PYTHONPATH=$PWD timeout 200 python3 benchmarks/results/run249/profile_probe.py water=.mid/water/model.dp \
  copper=.mid/copper/model.dp --top 22 > $OUT/run252_profile.txt 2>> $OUT/run252_err2.txt
PYTHONPATH=$PWD timeout 120 python3 benchmarks/results/run249/profile_probe.py water=.mid/water/compressed.dp \
  --top 22 > $OUT/run252_profile_compressed.txt 2>> $OUT/run252_err2.txt
grep "^##" $OUT/run252_profile.txt $OUT/run252_profile_compressed.txt
tail -3 $OUT/run252_err2.txt
el done
