#!/bin/bash
# Run 104 (one H100): the ASE calculator on a kept skin list, each call between builds one CUDA-graph replay (this
# tree), against a fresh list in every call (.old = 72f7cf2, examples/water/data included for md_bench's frames),
# alternating, through `md_bench.py --ase deeppot` (ASE's Bussi NVT) with a water model trained for 5000 steps;
# GPU tests.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=$OUT/tmp; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PWD/benchmarks
W=/tmp/w; mkdir -p $W
el gpu tests
timeout 200 python3 -m pytest -q -p no:cacheprovider --basetemp=/tmp/pyt tests/gpu/test_calculator_gpu.py \
  tests/gpu/test_md_gpu.py tests/infer/test_calculator.py 2>&1 | tee $OUT/run104_gpu_tests.txt | tail -3
el train
sed -e "s#DATA/#$PWD/.peer/data/#" -e 's/"numb_steps": *[0-9]*/"numb_steps": 5000/' benchmarks/results/gpu_nve/input.json > $W/input.json
(cd $W && timeout 100 python3 -m deeppot train input.json > train.log 2>&1; python3 -m deeppot freeze -o water_f64.dp >> train.log 2>&1)
tail -1 $W/lcurve.out | tee $OUT/run104_lcurve_tail.txt
python3 -c "
from deeppot.io import cast_model, load_model, save_model
save_model(cast_model(load_model('/tmp/w/water_f64.dp'), 'float32'), '/tmp/w/water_float32.dp')"
cp $W/water_f64.dp $W/water_float64.dp
el ase
for p in float32 float64; do for tree in . .old . .old; do
  env PYTHONPATH=$PWD/$tree:/tmp/site:$PWD/$tree/benchmarks timeout 100 python3 $tree/benchmarks/md_bench.py --ase deeppot \
    --sizes 192 1536 12288 --dtype $p --model $W/water_$p.dp --steps 100 --warmup 20 2>> $OUT/run104_err.txt \
    | sed "s#^{#{\"tree\": \"$tree\", #" | tee -a $OUT/run104_ase.jsonl
done; done
el end
