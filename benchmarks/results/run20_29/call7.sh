#!/bin/bash
# Session 20, call 7 (H100): inference after the descriptor goes straight to the fitting precision (no float64
# round trip for float32 models); kernel tests.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site:$PWD/benchmarks
el gpu tests
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_descriptor.py tests/compress/test_kernels.py tests/gpu/test_infer.py 2>&1 | tee $OUT/gpu_tests.txt | tail -2
el infer
timeout 300 python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs --systems water --precisions float32 float64 --sizes 12288 98304 --modes prebuilt_nlist --compress --repeat-seconds 1 --case-seconds 6 --out $OUT/infer.jsonl > $OUT/infer_stdout.log 2> $OUT/infer_stderr.log
python3 benchmarks/infer_bench.py --summary $OUT/infer.jsonl
el end
