#!/bin/bash
# Run 253 call 1, one GPU. (1) Run 252's prepared call 8: the training embedding backward kernel's chunk loop
# without loop-invariant code motion (this tree: run252/bwd_no_licm.patch applied; .old = 5f6fb6a): train_bench.py,
# fused kernels forced, water float32 and float64, 1000 steps, alternating trees, two rounds. (2) A profile of the
# float32 water training step (this tree). (3) Float64 atom tiles (`tile_probe.py`) on water 98,304 atoms.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
R=$PWD
ln -sfn $PWD/.peer .old/.peer
for round in 1 2; do
  for t in . .old; do
    el "train $t round $round"
    (cd $t && PYTHONPATH=$PWD timeout 100 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
      --steps 1000 water:float32:fused water:float64:fused) 2>> $OUT/run253_err1.txt \
      | sed "s/^{/{\"tree\": \"$t\", \"round\": $round, /" | tee -a $OUT/run253_call1.jsonl \
      | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*' | tr '\n' ' '
    echo
  done
done
el "profile"
PYTHONPATH=$PWD timeout 100 python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --profile \
  water:float32:fused > $OUT/run253_train_profile.txt 2>> $OUT/run253_err1.txt
head -c 3000 $OUT/run253_train_profile.txt
el "tiles"
PYTHONPATH=$PWD timeout 200 python3 benchmarks/results/run253/tile_probe.py water=.mid/water/model64.dp --natoms 98304 \
  --rounds 2 --calls 8 2>> $OUT/run253_err1.txt | tee $OUT/run253_tiles.jsonl
el done
tail -5 $OUT/run253_err1.txt
