#!/bin/bash
# Run 258 call 1 (one GPU): the centres in the order of their neighbour counts (`deeppot.infer.order`). GPU tests of
# the order, then order_probe.py on trained water, copper and the alloy (float32: the order, made once or every
# call, with (4, 16) and (8, 8) atom tiles), water cast to float64 and water compressed (the order alone).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -c "
from deeppot.io.model_file import load_model, cast_model, save_model
save_model(cast_model(load_model('.mid/water/model.dp'), 'float64'), '.mid/water/model64.dp')"
python3 -m deeppot compress -i .mid/water/model.dp -o .mid/water/compressed.dp 2>&1 | tail -1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
el tests
PYTHONPATH=$PWD:$PWD/tests timeout 150 python3 -m pytest -q -x tests/kernels/test_pairs.py tests/infer/test_order.py \
  tests/kernels/test_descriptor.py -k "pair_data or order or evaluator_by_type" 2>&1 | tail -2
PYTHONPATH=/tmp/site:$PWD timeout 120 python3 -m pytest -q -x tests/gpu/test_infer.py tests/gpu/test_calculator_gpu.py \
  2>&1 | tail -2
el probe
P=benchmarks/results/run258/order_probe.py
PYTHONPATH=$PWD:$PWD/benchmarks timeout 330 python3 $P water=.mid/water/model.dp copper=.mid/copper/model.dp \
  alloy=.mid/alloy/model.dp --rounds 2 --variants base tops order fresh order_8x8 order_g8x8 \
  2>> $OUT/run258_err1.txt | tee $OUT/run258_probe1.jsonl | cut -c1-300
el probe2
PYTHONPATH=$PWD:$PWD/benchmarks timeout 150 python3 $P water=.mid/water/model64.dp water=.mid/water/compressed.dp \
  --rounds 2 --variants base order 2>> $OUT/run258_err1.txt | tee -a $OUT/run258_probe1.jsonl | cut -c1-300
tail -3 $OUT/run258_err1.txt
el done
