#!/bin/bash
# Run 260 call 4 (prepared, never ran: no device time left; one GPU, ~3 minutes): the fitting net's hidden stack in
# one kernel (stack_probe.py: layers 2-3, the output, the top gradient and the gradients through W3 and W2 in one
# launch, the rows between them in an L2 scratch) against the tree's fitting nets, on the trained models' nets:
# water's H (65,536 rows) and O (32,768) nets, copper's (108,000), six tiles, one program a block or 2 / 4 programs
# a multiprocessor. Keep building on it only if a tile beats the tree's row ("variant": "tree") clearly.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
for spec in "water 65536 1" "water 32768 0" "copper 108000 0"; do
  set -- $spec
  el "$1 rows $2 type $3"
  PYTHONPATH=$PWD timeout 150 python3 benchmarks/results/run260/stack_probe.py --model .mid/$1/model.dp --rows $2 \
    --type $3 2>> $OUT/run260_err4.txt | tee -a $OUT/run260_stack4.jsonl | cut -c1-260
done
tail -3 $OUT/run260_err4.txt
el done
