#!/bin/bash
# Run 192: the cell list's pair kernel. (1) the kernel against its twin in one process (build_probe.py); (2) this
# tree against .old (0f8aaa1) in separate processes, alternating: nlist_bench (skin build/update, plain cell list),
# MD (md_timeline.py, float32, 98,304 atoms: a step and a rebuild), DeepPot.eval with its list build
# (infer_bench --modes eval); (3) GPU tests of the lists. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
ROOT=$PWD
T0=$(date +%s)
export PYTHONPATH=$ROOT:$ROOT/benchmarks:/tmp/site
timeout 150 python3 benchmarks/results/run192/build_probe.py 12288 98304 1000000 2>&1 | grep -v USDT \
  | tee $OUT/run192_probe.txt | cut -c1-200
echo "== probe $(( $(date +%s) - T0 )) s"
for round in 1 2; do
  for tree in . .old; do
    (cd $tree && export PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site && \
     timeout 60 python3 benchmarks/nlist_bench.py --sizes 98304 --cell --no-graph --repeats 5 \
       --build-repeats 3 2>&1 | grep '^{' | sed "s/^{/{\"tree\": \"$tree\", /" >> $OUT/run192_nlist.jsonl
     timeout 90 python3 $ROOT/benchmarks/results/run191/md_timeline.py /tmp float32 98304 2>&1 | grep '^{' \
       | sed "s/^{/{\"tree\": \"$tree\", /" >> $OUT/run192_md.jsonl
     timeout 60 python3 benchmarks/infer_bench.py --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs \
       --systems water --precisions float32 --sizes 98304 --modes eval --repeat-seconds 0.5 2>&1 | grep '^{' \
       | sed "s/^{/{\"tree\": \"$tree\", /" >> $OUT/run192_eval.jsonl)
    echo "== $tree round $round $(( $(date +%s) - T0 )) s"
  done
done
cut -c1-260 $OUT/run192_nlist.jsonl $OUT/run192_md.jsonl $OUT/run192_eval.jsonl
timeout 150 python3 -m pytest -q -p no:cacheprovider -rfs --tb=short tests/kernels/test_cell_pairs.py \
  tests/kernels/test_selection.py tests/nlist tests/gpu/test_md_gpu.py 2>&1 | tail -4
echo "== $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
