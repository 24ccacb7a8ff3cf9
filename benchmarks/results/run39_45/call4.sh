#!/bin/bash
# Session 21, call 4 (H100): GPU tests after the atom tiles; inference (water, copper, float32, 192 .. 10^6 atoms,
# compressed too) and MD at 98,304 water atoms with the atom-tile kernels now the float32 default.
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el tests
timeout 280 python3 -m pytest -q tests/kernels tests/compress/test_kernels.py tests/gpu 2>&1 | tail -4 | tee $OUT/run42_gpu_tests.txt
el infer
timeout 200 python3 benchmarks/infer_bench.py --systems water copper --precisions float32 --sizes 192 12288 98304 1000000 \
  --modes prebuilt_nlist --compress --data .peer/data --inputs .peer/inputs --out $OUT/run42_infer.jsonl > /dev/null 2>&1
python3 benchmarks/infer_bench.py --summary $OUT/run42_infer.jsonl
el md
timeout 80 python3 benchmarks/md_bench.py --sizes 98304 --dtype float32 --steps 100 --warmup 10 | tee $OUT/run42_md.jsonl
el end
