#!/bin/bash
# Run 152, second call: the training rows again (the first call passed train_bench.py's path to the wrapper).
set -u
export PYTHONUNBUFFERED=1
sed -n '/^R=/,/^el infer/p' benchmarks/results/run152/call1.sh | grep -v "^el infer" > /tmp/train152.sh
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
mv $OUT/run152_train.jsonl $OUT/run152_train_first.jsonl 2>/dev/null
source /tmp/train152.sh
el done
