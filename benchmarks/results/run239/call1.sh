#!/bin/bash
# Run 239: float64 and tf32x3 embedding weights made once in the registers' padded layout (`precision.padded_weight`)
# against c59f948 (.old, masked loads): parts_probe.py on both trees (float64; float32 forced to tf32x3), outputs
# compared; whole float64 calls (water 98,304, --modes eval), one round each; GPU tests of this tree.
# Carry [".peer", ".old", ".whl"].
set -u
export PYTHONUNBUFFERED=1
ROOT=$PWD
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
probe() {
  (cd $1 && PYTHONPATH=$PWD:$PWD/benchmarks timeout 120 python3 $ROOT/benchmarks/results/run239/parts_probe.py $2 $3 \
     ${4:-} 2>&1 | grep -v Warn | tee -a $OUT/run239_probe.jsonl)
}
probe .old old float64; probe . new float64; probe .old old float32 tf32x3; probe . new float32 tf32x3
echo "== probe $(( $(date +%s) - T0 )) s"
bench() {
  (cd $1 && PYTHONPATH=$PWD:$PWD/benchmarks timeout 90 python3 benchmarks/infer_bench.py \
     --data $ROOT/.peer/data --inputs $ROOT/.peer/inputs --systems water --precisions float64 \
     --sizes 98304 --modes eval --repeat-seconds 1.0 2>&1 | grep '^{' \
     | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" >> $OUT/run239_eval.jsonl)
}
bench .old 1; bench . 1
python3 -c "
import json
for l in open('$OUT/run239_eval.jsonl'):
    r = json.loads(l); print(r['tree'], r['round'], r['case'], r['ms_median'], r['atom_steps_per_s'], r['peak_mem_MiB'])
"
echo "== bench $(( $(date +%s) - T0 )) s"
PYTHONPATH=$PWD:/tmp/site timeout 270 python3 -m pytest -q -x -p no:cacheprovider -rf tests/kernels/test_descriptor.py \
  tests/gpu/test_infer.py 2>&1 | tail -3 | tee $OUT/run239_gpu_tests.txt
echo "== $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
