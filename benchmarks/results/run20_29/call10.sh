#!/bin/bash
# Session 20, call 10 (H100): MD graphs on fixed-capacity neighbour buffers (one capture a run): GPU tests, md_bench.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PWD/benchmarks
el gpu tests
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_md_gpu.py tests/gpu/test_infer.py tests/infer/test_neighbors.py tests/kernels/test_selection.py 2>&1 | tee $OUT/gpu_tests.txt | tail -3
el train
mkdir -p /tmp/w && cp -r examples/water/data /tmp/w/
python3 - <<'PY'
import json
d = json.load(open("examples/water/input.json"))
d["training"].update(numb_steps=10000, disp_freq=1000, save_freq=10000)
d["learning_rate"].update(decay_steps=500, stop_lr=1e-6)
json.dump(d, open("/tmp/w/input.json", "w"), indent=1)
PY
(cd /tmp/w && timeout 120 python3 -m deeppot train input.json > train.log 2>&1; python3 -m deeppot freeze -o water_f64.dp >> train.log 2>&1)
tail -1 /tmp/w/lcurve.out
python3 -c "from deeppot.io import load_model, save_model, cast_model; save_model(cast_model(load_model('/tmp/w/water_f64.dp'), 'float32'), '/tmp/w/water_f32.dp')"
el md
for dt in float32 float64; do m=/tmp/w/water_${dt/float/f}.dp
timeout 100 python3 benchmarks/md_bench.py --sizes 192 1536 12288 --dtype $dt --model $m --steps 300 --warmup 30 | tee -a $OUT/md.jsonl
timeout 100 python3 benchmarks/md_bench.py --sizes 12288 --dtype $dt --model $m --steps 300 --warmup 30 --graph on | tee -a $OUT/md.jsonl
done
el end
