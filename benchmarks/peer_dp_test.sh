#!/bin/bash
# After .peer/peer/deepmd_train.sh ran in the same device call: `dp test` of each DeePMD-kit run's final checkpoint
# on the full validation system(s), so both codes' accuracy is compared on every validation frame, not on the
# 3 random frames lcurve.out shows. Usage: peer_dp_test.sh SYSTEM...
set -u
export PYTHONPATH=/tmp/peer-site:$(realpath .peer/peer/stubs)
for ckpt in /tmp/tmp.*/model.ckpt.pt; do
  dir=$(dirname "$ckpt")
  info=$(python3 -c "import json; d = json.load(open('$dir/input.json')); \
print(d['model']['descriptor']['precision'], d['training']['numb_steps'], 'steps')")
  echo "=== dp test of $ckpt ($info)"
  (cd "$dir" && python3 -m deepmd --pt test -m model.ckpt.pt -s "$@" 2>&1 | grep -E "Energy RMSE/Natoms|Force  RMSE" | tail -2)
done
