#!/bin/bash
# Run 195: MD throughput by the standard benchmark (md_bench.py, Bussi NVT water, random weights, float32) after the
# pair kernel and the skin list's new candidates, this tree against .old (0f8aaa1), alternating twice. 12,288 atoms
# run graphed (the default), 98,304 eagerly. Carry [".whl", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
T0=$(date +%s)
for round in 1 2; do
  for tree in . .old; do
    (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 100 python3 benchmarks/md_bench.py \
       --sizes 12288 98304 --dtype float32 --steps 60 --warmup 10 2>&1 | grep '^{' \
       | sed "s/^{/{\"tree\": \"$tree\", /" >> $OUT/run195_md.jsonl)
    echo "== $tree round $round $(( $(date +%s) - T0 )) s"
  done
done
cut -c1-330 $OUT/run195_md.jsonl
nvidia-smi --query-gpu=name --format=csv,noheader
