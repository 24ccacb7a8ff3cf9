#!/bin/bash
# Run 208: the cell list's evaluation list selected in its own walk of the bins (`cell_pairs.select_pairs`: no
# candidate rows, no row width read back): GPU tests; the list alone (list_probe.py) and whole DeepPot.eval calls
# (infer_bench) against 2b95068 (.old; its large-system path is run 207's), alternating; the sync probe.
# Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 260 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_cell_pairs.py \
  tests/kernels/test_selection.py tests/gpu/test_infer.py tests/infer tests/nlist tests/gpu/test_md_gpu.py 2>&1 \
  | tail -4 | tee $OUT/run208_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
P=$ROOT/benchmarks/results/run208/list_probe.py
for round in 1 2; do
  for tree in . .old; do
    (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 60 python3 $P $tree 4 8 2>&1 | grep atoms \
       | tee -a $OUT/run208_list_probe.txt)
    (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 60 python3 benchmarks/infer_bench.py \
       --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float32 --sizes 12288 98304 \
       --modes eval --repeat-seconds 0.8 2>&1 | grep '^{' | sed "s/^{/{\"tree\": \"$tree\", \"round\": $round, /" >> $OUT/run208_eval.jsonl)
    echo "== $tree round $round $(( $(date +%s) - T0 )) s"
  done
done
for tree in . .old; do
  (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 60 python3 benchmarks/infer_bench.py \
     --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water copper --precisions float64 float32 --sizes 98304 \
     --modes eval --repeat-seconds 0.8 2>&1 | grep '^{' | sed "s/^{/{\"tree\": \"$tree\", \"round\": 3, /" >> $OUT/run208_eval.jsonl)
done
PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 60 python3 benchmarks/results/run198/sync_probe.py $OUT float32 8 \
  2>&1 | grep -v Warning | tee $OUT/run208_sync_float32_8.txt
python3 -c "
import json
for l in open('$OUT/run208_eval.jsonl'):
    r = json.loads(l); print(r['tree'], r['round'], r['case'], r.get('ms_per_call', r.get('ms_per_step')), r.get('atom_steps_per_s'))
"
echo "== total $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
