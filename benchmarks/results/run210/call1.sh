#!/bin/bash
# Run 210: the evaluation list's walk finds each centre's runs of bins in the kernel (no `_segments` arrays: ~40
# launches fewer), the host's box arithmetic in NumPy and the image shifts made once: GPU tests; run 209's in-process
# A/B (list_ab.py); whole DeepPot.eval calls against 2b95068 (.old), alternating; the sync probe.
# Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 280 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_cell_pairs.py \
  tests/kernels/test_selection.py tests/gpu/test_infer.py tests/infer tests/nlist tests/gpu/test_md_gpu.py 2>&1 \
  | tail -4 | tee $OUT/run210_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 200 python3 benchmarks/results/run209/list_ab.py 4 8 2>&1 \
  | grep atoms | tee $OUT/run210_list_ab.txt
echo "== list_ab $(( $(date +%s) - T0 )) s"
for round in 1 2; do
  for tree in . .old; do
    (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 60 python3 benchmarks/infer_bench.py \
       --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float32 --sizes 12288 98304 \
       --modes eval --repeat-seconds 0.8 2>&1 | grep '^{' | sed "s/^{/{\"tree\": \"$tree\", \"round\": $round, /" >> $OUT/run210_eval.jsonl)
    echo "== $tree round $round $(( $(date +%s) - T0 )) s"
  done
done
PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 60 python3 benchmarks/results/run198/sync_probe.py $OUT float32 8 \
  2>&1 | grep -v Warning | tee $OUT/run210_sync_float32_8.txt
rm -f $OUT/*.dp
python3 -c "
import json
for l in open('$OUT/run210_eval.jsonl'):
    r = json.loads(l); print(r['tree'], r['round'], r['case'], r.get('ms_per_call', r.get('ms_per_step')), r.get('atom_steps_per_s'))
"
echo "== total $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
