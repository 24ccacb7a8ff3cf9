#!/bin/bash
# Run 193: the skin list's candidates from build_candidates, the sort-free type split (with run 192's pair
# kernel). (1) build_probe.py: kernel against twin in one process; (2) this tree against .old (0f8aaa1), separate
# processes, alternating twice: nlist_bench, MD (run191/md_timeline.py float32 98,304), DeepPot.eval with its list
# build; (3) GPU tests of the lists and of MD, then every GPU test. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
ROOT=$PWD
T0=$(date +%s)
export PYTHONPATH=$ROOT:$ROOT/benchmarks:/tmp/site
timeout 120 python3 benchmarks/results/run193/build_probe.py 12288 98304 1000000 2>&1 | grep -v USDT \
  | tee $OUT/run193_probe.txt | cut -c1-180
echo "== probe $(( $(date +%s) - T0 )) s"
for round in 1 2; do
  for tree in . .old; do
    (cd $tree && export PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site && \
     timeout 60 python3 benchmarks/nlist_bench.py --sizes 98304 --cell --no-graph --repeats 5 \
       --build-repeats 3 2>&1 | grep '^{' | sed "s/^{/{\"tree\": \"$tree\", /" >> $OUT/run193_nlist.jsonl
     timeout 90 python3 $ROOT/benchmarks/results/run191/md_timeline.py /tmp float32 98304 2>&1 | grep '^{' \
       | sed "s/^{/{\"tree\": \"$tree\", /" >> $OUT/run193_md.jsonl
     timeout 60 python3 benchmarks/infer_bench.py --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs \
       --systems water --precisions float32 --sizes 98304 --modes eval --repeat-seconds 0.5 2>&1 | grep '^{' \
       | sed "s/^{/{\"tree\": \"$tree\", /" >> $OUT/run193_eval.jsonl)
    echo "== $tree round $round $(( $(date +%s) - T0 )) s"
  done
done
timeout 120 python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/kernels/test_cell_pairs.py \
  tests/kernels/test_selection.py tests/nlist tests/infer/test_neighbors.py 2>&1 | tail -3
echo "== $(( $(date +%s) - T0 )) s"
timeout 240 python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/gpu > $OUT/run193_gpu_tests.txt 2>&1
tail -3 $OUT/run193_gpu_tests.txt
echo "== $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
