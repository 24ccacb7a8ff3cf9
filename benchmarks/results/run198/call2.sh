#!/bin/bash
# Run 198, call 2: small systems again (call 1's 192 and 12,288-atom calls were noisy): the list alone in one
# process (list_probe.py), both trees' sync probes at 12,288 atoms alternating, and whole calls alternating with
# longer repeats. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
ROOT=$PWD
T0=$(date +%s)
PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 100 python3 benchmarks/results/run198/list_probe.py 4 8 2>&1 \
  | grep -v Warn | tee $OUT/run198_list_probe.txt
for round in 1 2; do
  PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 60 python3 benchmarks/results/run198/sync_probe.py $OUT float32 4 \
    2>&1 | grep -A20 "== phases" | tee -a $OUT/run198_probe_12288_new.txt
  PYTHONPATH=$ROOT/.old:$ROOT/.old/benchmarks:/tmp/site timeout 60 python3 benchmarks/results/run197/sync_probe.py \
    $OUT float32 4 2>&1 | grep -A20 "== phases" | tee -a $OUT/run198_probe_12288_old.txt
done
echo "== probes $(( $(date +%s) - T0 )) s"
for round in 1 2 3; do
  for tree in . .old; do
    (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 60 python3 benchmarks/infer_bench.py \
       --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float32 --sizes 192 12288 \
       --modes eval --repeat-seconds 1.5 2>&1 | grep '^{' | sed "s/^{/{\"tree\": \"$tree\", \"round\": $round, /" >> $OUT/run198_eval_small.jsonl)
    echo "== $tree round $round $(( $(date +%s) - T0 )) s"
  done
done
python3 -c "
import json
for l in open('$OUT/run198_eval_small.jsonl'):
    d = json.loads(l); print(d['tree'], d['round'], d['case'], d['ms_median'], d['ms_min'])"
nvidia-smi --query-gpu=name --format=csv,noheader
