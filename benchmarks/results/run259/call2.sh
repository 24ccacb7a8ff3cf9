#!/bin/bash
# Run 259 call 2 (one GPU): D's float16 parts written by the T kernels for the first fitting layer
# (`fitting_gemm.X_PARTS`): GPU tests of the changed kernels, parts_probe.py on trained models, then the fitting
# products alone at water's shapes (gemm_probe.py: other tiles, x's parts, dE/dD stored by TMA).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m deeppot compress -i .mid/water/model.dp -o .mid/water/compressed.dp 2>&1 | tail -1
el tests
PYTHONPATH=$PWD:$PWD/tests timeout 150 python3 -m pytest -q -x tests/kernels/test_fitting.py \
  tests/kernels/test_descriptor.py tests/compress/test_kernels.py -k "parts or persistent or writes_d or fused" \
  2>&1 | tail -3
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 200 python3 benchmarks/results/run259/parts_probe.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp \
  water=.mid/water/compressed.dp --rounds 2 2>> $OUT/run259_err2.txt | tee $OUT/run259_parts2.jsonl | cut -c1-330
el gemm
PYTHONPATH=$PWD timeout 200 python3 benchmarks/results/run259/gemm_probe.py --rows 65536 --set call2 \
  2>> $OUT/run259_err2.txt | tee $OUT/run259_gemm2.jsonl | cut -c1-200
tail -5 $OUT/run259_err2.txt
el done
