#!/bin/bash
# Run 209: the evaluation list's two ways in one process (list_ab.py: the list alone, its kernels, whole DeepPot.eval
# calls), 12,288 and 98,304 water atoms; MD (md_bench, 98,304 atoms; its per-step selection kernel now built from
# the shared type-block helpers) against 2b95068 (.old), alternating. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
T0=$(date +%s)
PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 200 python3 benchmarks/results/run209/list_ab.py 4 8 2>&1 \
  | grep atoms | tee $OUT/run209_list_ab.txt
echo "== list_ab $(( $(date +%s) - T0 )) s"
for round in 1 2; do
  for tree in . .old; do
    (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 80 python3 benchmarks/md_bench.py \
       --sizes 98304 --dtype float32 --steps 60 --warmup 10 2>&1 | grep '^{' \
       | sed "s/^{/{\"tree\": \"$tree\", \"round\": $round, /" | tee -a $OUT/run209_md.jsonl)
    echo "== md $tree $(( $(date +%s) - T0 )) s"
  done
done
nvidia-smi --query-gpu=name --format=csv,noheader
