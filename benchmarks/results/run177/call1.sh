#!/bin/bash
# Run 177: device time of one 98,304-atom water call by kernel (run 128's infer_kernels.py: float32 and float64,
# uncompressed and compressed), the session's final tree against 1e836d9 (.old), trees alternating twice: whole
# calls in runs 172-176 moved by more between processes of one tree than the change.
# Run from the repository root with carry [".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
mkdir -p /tmp/prof
i=0
for tree in . .old . .old; do
  i=$((i + 1))
  el "$tree"
  timeout 120 env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks python3 benchmarks/results/run128/infer_kernels.py /tmp/prof \
    > $OUT/run177_kernels_${i}.txt 2>> $OUT/run177_err.txt
  grep "^==" $OUT/run177_kernels_${i}.txt
done
el done
