#!/bin/bash
# Session 20, call 2 (H100): MD with planned rebuilds and the unsorted update (profiles), GPU MD tests, training
# memory options at 12,288 and 98,304 atoms (float32/float64), LAMMPS+DeePMD-kit at 98,304 atoms.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PWD/benchmarks
el gpu tests
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_md_gpu.py tests/infer/test_neighbors.py 2>&1 | tail -3
el train
mkdir -p /tmp/w && cp -r examples/water/data /tmp/w/
python3 - <<'PY'
import json
d = json.load(open("examples/water/input.json"))
d["training"].update(numb_steps=10000, disp_freq=1000, save_freq=10000)
d["learning_rate"].update(decay_steps=500, stop_lr=1e-6)
json.dump(d, open("/tmp/w/input.json", "w"), indent=1)
PY
R=$PWD; (cd /tmp/w && timeout 120 python3 -m deeppot train input.json > train.log 2>&1; python3 -m deeppot freeze -o water_f64.dp >> train.log 2>&1)
tail -1 /tmp/w/lcurve.out
python3 -c "from deeppot.io import load_model, save_model, cast_model; save_model(cast_model(load_model('/tmp/w/water_f64.dp'), 'float32'), '/tmp/w/water_f32.dp')"
el md
timeout 100 python3 benchmarks/md_bench.py --sizes 12288 98304 --dtype float32 --model /tmp/w/water_f32.dp --steps 300 --warmup 30 --profile /tmp/prof | tee -a $OUT/md.jsonl
timeout 100 python3 benchmarks/md_bench.py --sizes 12288 98304 --dtype float64 --model /tmp/w/water_f64.dp --steps 100 --warmup 20 --profile /tmp/prof | tee -a $OUT/md.jsonl
for f in /tmp/prof/*.txt; do echo "### $f"; cat $f; done > $OUT/md_profiles.txt
el memory
timeout 100 python3 benchmarks/memory_bench.py --precision float32 --atoms 12288 --steps 3 --warmup 1 --techniques plain checkpoint chunk4096 checkpoint+chunk4096 bf16 | tee -a $OUT/memory.jsonl
timeout 150 python3 benchmarks/memory_bench.py --precision float64 --atoms 12288 98304 --steps 3 --warmup 1 --techniques plain checkpoint+chunk4096 | tee -a $OUT/memory.jsonl
el lammps
cp .whl/*.whl .lmp/whl/ 2>/dev/null
LMP_STEPS=20 LMP_WARMUP=5 MD_STEPS=100 MD_WARMUP=20 timeout 200 bash benchmarks/lammps_md.sh /tmp/w/water_f64.dp /tmp/lmpw 98304 2>&1 | grep -v -e "^ *$" -e WARNING | tee $OUT/lammps98304.log | tail -8
el ase
export PYTHONPATH=/tmp/lmpsite:$PWD:$PWD/benchmarks:$PWD/benchmarks/stubs
timeout 60 python3 benchmarks/md_bench.py --sizes 1536 12288 --dtype float64 --model /tmp/w/water_f64.dp --steps 20 --warmup 3 --ase deeppot | tee -a $OUT/md.jsonl
timeout 90 python3 benchmarks/md_bench.py --sizes 1536 12288 --dtype float64 --model /tmp/w/water_f64.dp --steps 10 --warmup 2 --ase deepmd --peer-model /tmp/lmpw/model.pth 2>&1 | grep -v WARNING | tail -4 | tee -a $OUT/md.jsonl
el end
