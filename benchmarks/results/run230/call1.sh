#!/bin/bash
# Run 230: the host's checks in PyTorch from 65,536 values (the sum for finiteness), the outputs back through pinned
# memory, kept types compared by torch.equal. GPU tests of inference; out_probe.py; run 222's call_steps.py and
# infer_bench.py --modes eval (water float32, 192 / 12,288 / 98,304 atoms) on this tree and 18a255f (.old),
# alternating. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_infer.py 2>&1 | tail -2 \
  | tee $OUT/run230_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
PYTHONPATH=$PWD timeout 60 python3 benchmarks/results/run230/out_probe.py 2>&1 | tee $OUT/run230_out_probe.txt
P=$ROOT/benchmarks/results/run222/call_steps.py
for round in 1 2; do
  for tree in . .old; do
    for reps in 4 8; do
      (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks timeout 60 python3 $P float32 $reps 2>&1 | grep atoms \
        | sed "s|^|$tree r$round |" | tee -a $OUT/run230_call_steps.txt)
    done
  done
done
echo "== steps $(( $(date +%s) - T0 )) s"
bench() {
  (cd $1 && PYTHONPATH=$PWD:$PWD/benchmarks timeout 90 python3 benchmarks/infer_bench.py \
     --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float32 \
     --sizes 192 12288 98304 --modes eval --repeat-seconds 1.0 2>&1 | grep '^{' \
     | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" >> $OUT/run230_eval.jsonl)
}
bench .old 1; bench . 1; bench . 2; bench .old 2
python3 -c "
import json, collections
rows = collections.defaultdict(list)
for l in open('$OUT/run230_eval.jsonl'):
    r = json.loads(l)
    rows[(r['case'], r['tree'])].append(r['ms_median'])
for (case, tree), v in sorted(rows.items()): print(case, tree, ' '.join(f'{x:.3f}' for x in v))
"
echo "== $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
