#!/bin/bash
# Run 260 call 1 (one GPU): the compressed calls kernel by kernel in both precisions (run 259's profile_probe.py),
# for issue 10's float64 target, which had no profile: water compressed float32 and float64 (the trained float32
# weights cast to float64, then compressed), water float64 uncompressed beside them.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -c "
from deeppot.io.model_file import load_model, cast_model, save_model
save_model(cast_model(load_model('.mid/water/model.dp'), 'float64'), '.mid/water/model64.dp')"
python3 -m deeppot compress -i .mid/water/model.dp -o .mid/water/compressed.dp 2>&1 | tail -1
python3 -m deeppot compress -i .mid/water/model64.dp -o .mid/water/compressed64.dp 2>&1 | tail -1
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 240 python3 benchmarks/results/run259/profile_probe.py \
  water:compressed=.mid/water/compressed.dp water:compressed64=.mid/water/compressed64.dp \
  water:float64=.mid/water/model64.dp \
  2>> $OUT/run260_err1.txt | tee $OUT/run260_profile1.jsonl | grep -v '"ms": 0.0' | cut -c1-160
tail -3 $OUT/run260_err1.txt
el done
