#!/bin/bash
# Run 134 (one H100): (1) jet_probe.py: G and dG/ds computed once and stored (the training forward's kernels) against
# the two atom-tile kernels that recompute the net, per chunk of atoms; (2) the compressed kernels' tiles with one
# warp and fewer slots or more atoms; (3) two-warp tiles of the uncompressed atom-tile kernels (float32).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run134; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
P="env PYTHONPATH=$PWD:$PWD/benchmarks"
el probe
$P timeout 200 python3 benchmarks/results/run134/jet_probe.py float32 float64 > $OUT/run134_probe.jsonl 2>> $OUT/run134_err.txt
cat $OUT/run134_probe.jsonl
el compressed tiles
$P timeout 170 python3 benchmarks/compress_tiles.py --data .peer/data --inputs .peer/inputs \
  --tiles 1,4,1 1,2,1 2,4,1 2,2,1 1,8,1 4,2,1 > $OUT/run134_ctiles.jsonl 2>> $OUT/run134_err.txt
cat $OUT/run134_ctiles.jsonl
el atom tiles
$P timeout 150 python3 benchmarks/atom_tiles_sweep.py --tiles 4,16,4 8,8,4 1,16,2 2,16,2 2,8,2 4,8,2 \
  > $OUT/run134_atiles.jsonl 2>> $OUT/run134_err.txt
cat $OUT/run134_atiles.jsonl
tail -8 $OUT/run134_err.txt
el done
