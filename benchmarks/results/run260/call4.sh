#!/bin/bash
# Run 260 call 4 (prepared, never ran: no device time left; one GPU, ~5 minutes), two fusions of the fitting nets,
# each against the tree on the trained models' nets (water's H (65,536 rows) and O (32,768) nets, copper's
# (108,000)), over tiles:
# - stack_probe.py: the hidden stack in one kernel (layers 2-3, the output, the top gradient and the gradients
#   through W3 and W2 in one launch, the rows between them in an L2 scratch) against the tree's whole nets; one
#   program a block or 2 / 4 programs a multiprocessor;
# - tbar_probe.py: dE/dT folded from dE/dD's column tiles in the product's program, dE/dD never stored, against the
#   tree's product_t + t_bar_from_desc_grad.
# Keep building on either only if a tile beats its tree row ("variant": "tree") clearly. Carry .mid (run 257's models).
# The kernels are tail.patch's (applied here unless call 5 has already applied it in this call's tree).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
[ -f deeppot/kernels/fitting_tail.py ] || patch -p1 -s < benchmarks/results/run260/tail.patch  # main keeps the tree's path
for spec in "water 65536 1" "water 32768 0" "copper 108000 0"; do
  set -- $spec
  el "$1 rows $2 type $3"
  PYTHONPATH=$PWD timeout 200 python3 benchmarks/results/run260/stack_probe.py --model .mid/$1/model.dp --rows $2 \
    --type $3 2>> $OUT/run260_err4.txt | tee -a $OUT/run260_stack4.jsonl | cut -c1-260
  PYTHONPATH=$PWD timeout 100 python3 benchmarks/results/run260/tbar_probe.py --model .mid/$1/model.dp --rows $2 \
    --type $3 2>> $OUT/run260_err4.txt | tee -a $OUT/run260_tbar4.jsonl | cut -c1-260
done
tail -3 $OUT/run260_err4.txt
el done
