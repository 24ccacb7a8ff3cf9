#!/bin/bash
# Run 196: DeepPot.eval's input checks in one pass over the flat arrays (the common case) against 8a658d6 (.old):
# whole calls with the list built (infer_bench --modes eval, water float32 98,304 atoms), alternating three times.
# Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
ROOT=$PWD
T0=$(date +%s)
for round in 1 2 3; do
  for tree in . .old; do
    (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 60 python3 benchmarks/infer_bench.py \
       --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float32 --sizes 98304 \
       --modes eval --repeat-seconds 1.0 2>&1 | grep '^{' | sed "s/^{/{\"tree\": \"$tree\", /" >> $OUT/run196_eval.jsonl)
    echo "== $tree round $round $(( $(date +%s) - T0 )) s"
  done
done
python3 -c "
import json
for l in open('$OUT/run196_eval.jsonl'):
    d = json.loads(l); print(d['tree'], d['ms_median'], d['ms_min'], d['calls'], d['e_per_atom'])"
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/infer/test_deep_pot.py 2>&1 | tail -1
nvidia-smi --query-gpu=name --format=csv,noheader
