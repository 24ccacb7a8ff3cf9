#!/bin/bash
# Run 202: the image layers remembered in nlist.ghosts.nbuff_for (for every caller, not GraphedCall alone) and the
# type rows' counts without bincount: the inference GPU tests, run 200's probe, and DeepPot.eval of ~1.1 million
# water atoms (float32, peak memory with the candidate-order list) in both trees. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
PYTHONPATH=/tmp/site timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_infer.py \
  tests/infer/test_deep_pot.py tests/infer/test_type_rows.py 2>&1 | tail -2 | tee $OUT/run202_gpu_tests.txt
PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 120 python3 benchmarks/results/run200/small_probe.py 2>&1 \
  | grep -v Warn | tee $OUT/run202_small_probe.txt
for tree in . .old; do
  (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site timeout 150 python3 benchmarks/infer_bench.py \
     --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float32 --sizes 98304 1000000 \
     --modes eval --repeat-seconds 1.0 2>&1 | grep '^{' | sed "s/^{/{\"tree\": \"$tree\", /" >> $OUT/run202_eval.jsonl)
done
python3 -c "
import json
for l in open('$OUT/run202_eval.jsonl'):
    d = json.loads(l); print(d['tree'], d['case'], d['ms_median'], d['ms_min'], d.get('atom_steps_per_s'), d.get('peak_mem_MiB'), d.get('e_per_atom'))"
nvidia-smi --query-gpu=name --format=csv,noheader
