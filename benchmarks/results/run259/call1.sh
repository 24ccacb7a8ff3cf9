#!/bin/bash
# Run 259 call 1 (one GPU): where the current tree's prebuilt-list call goes, kernel by kernel (profile_probe.py):
# trained water float32 (ordered, the default), water compressed, copper float32, water float64.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -c "
from deeppot.io.model_file import load_model, cast_model, save_model
save_model(cast_model(load_model('.mid/water/model.dp'), 'float64'), '.mid/water/model64.dp')"
python3 -m deeppot compress -i .mid/water/model.dp -o .mid/water/compressed.dp 2>&1 | tail -1
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 300 python3 benchmarks/results/run259/profile_probe.py \
  water:float32=.mid/water/model.dp water:compressed=.mid/water/compressed.dp copper:float32=.mid/copper/model.dp \
  alloy:float32=.mid/alloy/model.dp water:float64=.mid/water/model64.dp \
  2>> $OUT/run259_err1.txt | tee $OUT/run259_profile1.jsonl | grep -v '"ms": 0.0' | cut -c1-160
tail -3 $OUT/run259_err1.txt
el done
