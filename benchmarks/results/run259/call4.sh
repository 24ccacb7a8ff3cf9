#!/bin/bash
# Run 259 call 4 (prepared in session 24; ran in session 25 on an H100, after two failed starts and call 3 lost to a machine
# taken back: results in benchmarks/results/README.md, run 260; one GPU; call 3's leaner twin): D's float16 parts
# written by the T kernels for the first fitting layer (`fitting_gemm.X_PARTS` on `PARTS_TILE`): GPU tests of the
# changed kernels, then parts_probe.py (whole / parts) on trained models.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
patch -p1 -s < benchmarks/results/run259/d_parts.patch  # the tree keeps D whole; this call measures the parts
python3 -m deeppot compress -i .mid/water/model.dp -o .mid/water/compressed.dp 2>&1 | tail -1
el tests
PYTHONPATH=$PWD:$PWD/tests timeout 80 python3 -m pytest -q tests/kernels/test_fitting.py \
  tests/kernels/test_descriptor.py tests/compress/test_kernels.py -k "parts or persistent or writes_d" 2>&1 | tail -2
el probe
PYTHONPATH=$PWD:$PWD/benchmarks timeout 140 python3 benchmarks/results/run259/parts_probe.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp \
  water=.mid/water/compressed.dp --rounds 2 --calls 10 --variants whole parts 2>> $OUT/run259_err4.txt \
  | tee $OUT/run259_parts4.jsonl | cut -c1-300
tail -2 $OUT/run259_err4.txt
el done
