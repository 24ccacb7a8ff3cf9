#!/bin/bash
# Run 252 call 1 (one GPU): the float32 atom tiles on prescaled biases (`atom_tiles.PRESCALED`): kernel tests, then
# prescale_probe.py on trained water, copper and the alloy, then the inference GPU tests.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el tests
PYTHONPATH=$PWD timeout 150 python3 -m pytest -q -x tests/kernels/test_descriptor.py \
  -k "atom_tiles or holds or f16x3 or prescaled" 2>&1 | tail -2
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 330 python3 benchmarks/results/run252/prescale_probe.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 2 \
  2>> $OUT/run252_err1.txt | tee $OUT/run252_call1.jsonl | cut -c1-400
tail -5 $OUT/run252_err1.txt
el gpu tests
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
PYTHONPATH=/tmp/site:$PWD timeout 100 python3 -m pytest -q -x tests/gpu/test_infer.py 2>&1 | tail -2
el done
