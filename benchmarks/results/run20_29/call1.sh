#!/bin/bash
# Session 20, call 1 (H100): LAMMPS+DeePMD-kit vs deeppot MD, the unsorted skin-list update, MD vs evaluation.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
el train
mkdir -p /tmp/w && cp -r examples/water/data /tmp/w/
python3 - <<'PY'
import json
d = json.load(open("examples/water/input.json"))
d["training"].update(numb_steps=10000, disp_freq=1000, save_freq=10000)
d["learning_rate"].update(decay_steps=500, stop_lr=1e-6)
json.dump(d, open("/tmp/w/input.json", "w"), indent=1)
PY
R=$PWD; (cd /tmp/w && PYTHONPATH=$R timeout 120 python3 -m deeppot train input.json > train.log 2>&1; PYTHONPATH=$R python3 -m deeppot freeze -o water_f64.dp >> train.log 2>&1)
tail -4 /tmp/w/train.log; tail -2 /tmp/w/lcurve.out; cp /tmp/w/lcurve.out $OUT/lcurve_10000.out
PYTHONPATH=$PWD python3 -c "from deeppot.io import load_model, save_model, cast_model; save_model(cast_model(load_model('/tmp/w/water_f64.dp'), 'float32'), '/tmp/w/water_f32.dp')"
el lammps
LMP_STEPS=50 LMP_WARMUP=10 MD_STEPS=100 MD_WARMUP=20 timeout 330 bash benchmarks/lammps_md.sh /tmp/w/water_f64.dp /tmp/lmpw 12288 98304 2>&1 | grep -v "^ *$" | tee $OUT/lammps.log | tail -20
cp /tmp/lmpw/log_nve.lammps $OUT/ 2>/dev/null
export PYTHONPATH=/tmp/lmpsite:$PWD:$PWD/benchmarks
el nlist
timeout 60 python3 benchmarks/nlist_bench.py --sizes 12288 98304 1000000 --repeats 10 | tee $OUT/nlist.jsonl
el md f32
timeout 90 python3 benchmarks/md_bench.py --sizes 12288 98304 --dtype float32 --model /tmp/w/water_f32.dp --steps 200 --warmup 20 | tee -a $OUT/md.jsonl
timeout 90 python3 benchmarks/md_bench.py --sizes 12288 98304 --dtype float32 --model /tmp/w/water_f32.dp --steps 200 --warmup 20 --sorted-nlist | tee -a $OUT/md.jsonl
timeout 80 python3 benchmarks/md_bench.py --sizes 12288 98304 --dtype float64 --model /tmp/w/water_f64.dp --steps 100 --warmup 20 --sorted-nlist | tee -a $OUT/md.jsonl
el end
