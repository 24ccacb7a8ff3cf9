#!/bin/bash
# Run 164: the atom-tile gradient stores dE/dR_ij and `env_rows.back_to_pairs` (one slot a lane) takes it to
# dE/dr_ij (run 163's probe, made real), this tree against bd13675 (.old): the atom-tile kernels alone (run 151's
# probe, both trees, outputs compared), then whole calls, trees alternating twice.
# Run from the repository root with carry [".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
mkdir -p /tmp/r164
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
P=benchmarks/results/run151/tanh_kernels.py
el kernels
for rep in 1 2; do
  for tree in . .old; do
    name=$([ $tree = . ] && echo new || echo old)
    timeout 90 env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks python3 $P $name /tmp/r164 \
      >> $OUT/run164_kernels.jsonl 2>> $OUT/run164_err.txt
  done
done
python3 $P --compare /tmp/r164 new old >> $OUT/run164_kernels.jsonl 2>> $OUT/run164_err.txt
cat $OUT/run164_kernels.jsonl
el infer
A="--data .peer/data --inputs .peer/inputs"
for tree in . .old . .old; do
  timeout 95 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water copper \
    --precisions float32 float64 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 --compress \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run164_infer.jsonl 2>> $OUT/run164_err.txt
done
python3 -c "
import json
for l in open('$OUT/run164_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', ''))"
el done
tail -3 $OUT/run164_err.txt
