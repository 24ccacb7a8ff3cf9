#!/bin/bash
# Run 194: where a whole DeepPot.eval call goes after the pair kernel (eval_timeline.py, 98,304 water atoms,
# float32 and float64). Carry [".whl", ".peer"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site
T0=$(date +%s)
for p in float32 float64; do
  timeout 120 python3 benchmarks/results/run194/eval_timeline.py /tmp $p 2>&1 | grep -v "USDT\|UserWarning\|_warn_once" \
    | tee $OUT/run194_eval_timeline_$p.txt
  echo "== $(( $(date +%s) - T0 )) s"
done
nvidia-smi --query-gpu=name --format=csv,noheader
