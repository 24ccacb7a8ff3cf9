#!/bin/bash
# Run 102 (one H100): `deeppot md --tf32` (GPU tests; 10 ps NVE of a trained water model, float32 against tf32, at 192
# and 1,536 atoms; MD speed at 12,288 and 98,304 atoms), and profiles of the water float64 step, default and compiled
# (issue 11: where the 0.5 ms between them goes).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=$OUT/tmp; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PWD/benchmarks
W=/tmp/w; mkdir -p $W
el gpu tests
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_md_gpu.py tests/md/test_cli_md.py 2>&1 | tee $OUT/run102_gpu_tests.txt | tail -3
el train
sed "s#DATA/#$PWD/.peer/data/#" benchmarks/results/gpu_nve/input.json > $W/input.json
(cd $W && timeout 150 python3 -m deeppot train input.json > train.log 2>&1; python3 -m deeppot freeze -o water_f64.dp >> train.log 2>&1)
tail -2 $W/train.log; tail -1 $W/lcurve.out; cp $W/lcurve.out $OUT/run102_lcurve.out
python3 - <<'PY'
import numpy as np
from ase import Atoms
from ase.io import write
from deeppot.io import cast_model, load_model, save_model
save_model(cast_model(load_model("/tmp/w/water_f64.dp"), "float32"), "/tmp/w/water_f32.dp")
d = ".peer/data/water/data_0"
names, types = open(f"{d}/type_map.raw").read().split(), np.loadtxt(f"{d}/type.raw", dtype=int)
atoms = Atoms([names[t] for t in types], positions=np.load(f"{d}/set.000/coord.npy")[0].reshape(-1, 3),
              cell=np.load(f"{d}/set.000/box.npy")[0].reshape(3, 3), pbc=True)
write("/tmp/w/w192.extxyz", atoms)
write("/tmp/w/w1536.extxyz", atoms.repeat(2))
PY
el nve
for n in 192 1536; do for p in f32 tf32; do
  flag=""; [ $p = tf32 ] && flag=--tf32
  timeout 240 python3 -m deeppot md -m $W/water_f32.dp $flag -c $W/w$n.extxyz --ensemble nve --temp 300 --dt 0.5 \
    --steps 20000 --thermo 20 --dump 20000 -o $W/md_${p}_$n > $W/md_${p}_$n.log 2>&1 &
done; done; wait
for n in 192 1536; do for p in f32 tf32; do
  tail -2 $W/md_${p}_$n.log
  gzip -c $W/md_${p}_$n/thermo.out > $OUT/run102_thermo_${p}_$n.out.gz
  python3 benchmarks/nve_drift.py $W/md_${p}_$n/thermo.out --atoms $n | sed "s#^{#{\"case\": \"water:$p:nve:$n\", #" | tee -a $OUT/run102_nve.jsonl
  python3 benchmarks/nve_drift.py $W/md_${p}_$n/thermo.out --atoms $n --skip-ps 0.5 | sed "s#^{#{\"case\": \"water:$p:nve:$n:0.5-10ps\", #" | tee -a $OUT/run102_nve.jsonl
done; done
el md speed
for flag in "" --tf32; do
  timeout 150 python3 benchmarks/md_bench.py --sizes 12288 98304 --dtype float32 --model $W/water_f32.dp --steps 100 --warmup 20 $flag | tee -a $OUT/run102_md.jsonl
done
el profiles
B="env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
for c in water:float64 water:float64:compile; do
  name=$(echo $c | tr : _)
  rm -rf $TMPDIR/bench-*
  timeout 150 $B --profile $c > $OUT/run102_profile_$name.txt 2>&1
  grep -v -i "warn" $OUT/run102_profile_$name.txt | grep -A34 "^profile of" | cut -c1-120
  f=$(ls -t $TMPDIR/bench-water-*/timeline.json | head -1); gzip -c $f > $OUT/run102_timeline_$name.json.gz
done
rm -rf $TMPDIR
el end
