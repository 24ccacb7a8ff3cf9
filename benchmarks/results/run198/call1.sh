#!/bin/bash
# Run 198: DeepPot.eval with few host syncs and the evaluation's list in candidate order (this tree) against
# b6a02ab (.old): the sync probe of this tree, then whole calls (infer_bench --modes eval) alternating trees,
# and the skin list's build (nlist_bench). Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
ROOT=$PWD
T0=$(date +%s)
for args in "float32 8" "float32 4" "float64 8"; do
  PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 100 python3 benchmarks/results/run198/sync_probe.py $OUT $args \
    2>&1 | grep -v Warning > $OUT/run198_sync_${args// /_}.txt
  cat $OUT/run198_sync_${args// /_}.txt
done
echo "== probes $(( $(date +%s) - T0 )) s"
for round in 1 2 3; do
  for tree in . .old; do
    prec="float32"; [ $round = 1 ] && prec="float32 float64"
    (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 90 python3 benchmarks/infer_bench.py \
       --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions $prec --sizes 192 12288 98304 \
       --modes eval --repeat-seconds 0.7 2>&1 | grep '^{' | sed "s/^{/{\"tree\": \"$tree\", \"round\": $round, /" >> $OUT/run198_eval.jsonl)
    echo "== $tree round $round $(( $(date +%s) - T0 )) s"
  done
done
for tree in . .old; do
  (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 60 python3 benchmarks/nlist_bench.py --sizes 98304 \
     --cell --no-graph 2>&1 | grep '^{' | sed "s/^{/{\"tree\": \"$tree\", /" >> $OUT/run198_nlist.jsonl)
done
python3 -c "
import json
for l in open('$OUT/run198_eval.jsonl'):
    d = json.loads(l); print(d['tree'], d['round'], d['case'], d['ms_median'], d['ms_min'], d.get('e_per_atom'))
for l in open('$OUT/run198_nlist.jsonl'):
    print(l.strip()[:300])"
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== total $(( $(date +%s) - T0 )) s"
