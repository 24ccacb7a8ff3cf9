#!/bin/bash
# Run 155 (one H100): float32's tanh as 1 - 2 / (1 + e^2z) (this tree) against 06d890e (.old, sign(z) (1 - t) /
# (1 + t)): errors against float64 (run145/products_accuracy.py), the atom-tile kernels alone (run151's probe),
# whole calls of water, copper and the alloy in float32, the training step, the GPU tests of the changed kernels.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run155; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
el accuracy
for tree in . .old; do
  timeout 120 env PYTHONPATH=$PWD/$tree:/tmp/site python3 benchmarks/results/run145/products_accuracy.py .peer/data \
    | sed "s#^{#{\"tree\": \"$tree\", #" | grep -v '"tf32"' >> $OUT/run155_accuracy.jsonl 2>> $OUT/run155_err.txt
done
cat $OUT/run155_accuracy.jsonl
el kernels
for tree in . .old; do
  timeout 90 env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks python3 benchmarks/results/run151/tanh_kernels.py $tree \
    $TMPDIR >> $OUT/run155_kernels.jsonl 2>> $OUT/run155_err.txt
done
python3 benchmarks/results/run151/tanh_kernels.py --compare $TMPDIR . .old >> $OUT/run155_kernels.jsonl 2>> $OUT/run155_err.txt
grep float32 $OUT/run155_kernels.jsonl
el infer
A="--data .peer/data --inputs .peer/inputs"
for tree in . .old . .old; do
  timeout 100 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water copper alloy \
    --precisions float32 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run155_infer.jsonl 2>> $OUT/run155_err.txt
done
python3 -c "
import json
for l in open('$OUT/run155_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('path'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('e_per_atom'), r.get('error', ''))"
el train
for tree in . .old; do
  env PYTHONPATH=$PWD/$tree:$PWD/$tree/benchmarks timeout 60 python3 $tree/benchmarks/train_bench.py --data .peer/data \
    --inputs .peer/inputs --steps 1000 water:float32 | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run155_train.jsonl 2>> $OUT/run155_err.txt
done
python3 -c "
import json
for l in open('$OUT/run155_train.jsonl'):
    r=json.loads(l); print(r['tree'], r['case'], r.get('ms_per_step'), str(r.get('final', r.get('error', '')))[:100])"
el tanh errors
env PYTHONPATH=$PWD:$PWD/tests/kernels python3 -c "
import torch, test_activation as t
for dt in (torch.float32, torch.float64):
    z = t.arguments(dt); got, want = t.kernel_tanh(z).double(), torch.tanh(z.double())
    e, eps = (got - want).abs(), torch.finfo(dt).eps
    print(dt, 'largest absolute error / eps', e.max().item() / eps, 'relative / eps where |z| >= 0.5',
          (e / want.abs())[z.abs() >= 0.5].max().item() / eps)
" > $OUT/run155_tanh_errors.txt 2>&1
cat $OUT/run155_tanh_errors.txt
el gpu tests
timeout 200 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/kernels/test_activation.py \
  tests/kernels/test_descriptor.py tests/kernels/test_embedding.py tests/kernels/test_fitting.py > $OUT/run155_gpu_tests.txt 2>&1
tail -3 $OUT/run155_gpu_tests.txt
tail -3 $OUT/run155_err.txt
el done
