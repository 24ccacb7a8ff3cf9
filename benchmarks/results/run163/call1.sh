#!/bin/bash
# Run 163 (prepared in stop 40, not yet run): a timing probe for the uncompressed atom-tile gradient kernel with the
# way back from dE/dR_ij to dE/dr_ij moved out of it (store_q.patch: the kernel stores dE/dR_ij, four values a slot,
# and keeps none of the row's pair vector, 1/(r+p), switch and statistics offset alive through its products; the
# patched tree's dE/dr is wrong by design). ptxas (sm_90, on the CPU): float32 f16x3 (4,16,4) spills 404 -> 252 B,
# float64 (2,8,4) 208 -> 76 B. If the kernel gains, the real change is the compressed kernels' _back_kernel shared
# with the atom tiles. Run from the repository root with carry [".peer"] (the probe builds its own box).
set -u
export PYTHONUNBUFFERED=1
mkdir -p /tmp/run163
rm -rf /tmp/q && mkdir -p /tmp/q && git archive HEAD deeppot benchmarks | tar -x -C /tmp/q
(cd /tmp/q && patch -p1 < $PWD/benchmarks/results/run163/store_q.patch) || exit 1
for rep in 1 2; do
  for tree in $PWD /tmp/q; do
    timeout 90 env PYTHONPATH=$tree:$tree/benchmarks python3 benchmarks/results/run151/tanh_kernels.py \
      $(basename $tree) /tmp/run163 >> $OUT/run163_kernels.jsonl 2>> $OUT/run163_err.txt
  done
done
cat $OUT/run163_kernels.jsonl
tail -3 $OUT/run163_err.txt
