#!/bin/bash
# Run 236, second call: GPU tests of the kernels and inference on this tree; whole calls of water and copper
# (float32, --modes eval) with the f16x3 gradient tile on (4, 16, 4) (kept) and (2, 32, 4), alternating.
# Carry [".peer", ".whl"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
T0=$(date +%s)
PYTHONPATH=$PWD:/tmp/site timeout 260 python3 -m pytest -q -x -p no:cacheprovider -rf tests/kernels/test_descriptor.py \
  tests/kernels/test_precision.py tests/gpu/test_infer.py tests/gpu/test_calculator_gpu.py 2>&1 | tail -3 \
  | tee $OUT/run236_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
for round in 1 2; do
  for tile in 4,16,4 2,32,4; do
    PYTHONPATH=$PWD:$PWD/benchmarks timeout 100 python3 benchmarks/results/run236/tile_bench.py $tile \
      --data .peer/data --inputs .peer/inputs --systems water copper --precisions float32 --sizes 98304 \
      --modes eval --repeat-seconds 1.0 2>&1 | grep '^{' | sed "s/^{/{\"grad_tile\": \"$tile\", \"round\": $round, /" \
      >> $OUT/run236_tiles.jsonl
  done
done
python3 -c "
import json, collections
rows = collections.defaultdict(list)
for l in open('$OUT/run236_tiles.jsonl'):
    r = json.loads(l)
    rows[(r['case'], r['grad_tile'])].append(f\"{r['ms_median']:.3f} ({r['atom_steps_per_s']:.2e})\")
for k, v in sorted(rows.items()): print(*k, ' '.join(v))
"
echo "== $(( $(date +%s) - T0 )) s"
