#!/bin/bash
# Session 21, call 7 (H100), run 38: the default path a DeePMD-kit user hits: `deeppot train` on the benchmark inputs
# as given (numb_steps 1,000,000), so the force path compiles by itself; stopped by timeout after ~75 s each.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
for name in water alloy; do
  mkdir -p /tmp/$name && sed "s#DATA/#$PWD/.peer/data/#g" .peer/inputs/${name}_se_e2_a.json > /tmp/$name/input.json
  echo "== $name"
  (cd /tmp/$name && timeout 75 python3 -m deeppot train input.json 2>&1 | grep -E "compile|embedding net|start-up|[0-9]000: total wall time|rror" \
     | head -20 | tee -a $OUT/default_path.txt)
done
