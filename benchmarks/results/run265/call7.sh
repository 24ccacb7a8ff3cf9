#!/bin/bash
# Run 265 call 7 (one GPU, ~5 minutes; carry .mid, .peer and .whl): the final tree (dE/dD on cuBLAS): call 4's MD and
# prebuilt-list rows again, then the inference-side GPU tests (calculator, ensemble, MD, tools).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
el md
PYTHONPATH=/tmp/site:$PWD:$PWD/benchmarks timeout 60 python3 benchmarks/md_bench.py --sizes 98304 \
  --dtype float32 --model .mid/water/model.dp --steps 100 --warmup 20 2>> $OUT/run265_err7.txt \
  | tee -a $OUT/run265_md7.jsonl | cut -c1-300
el bench
M="water:float32=.mid/water/model.dp copper:float32=.mid/copper/model.dp alloy:float32=.mid/alloy/model.dp"
PYTHONPATH=$PWD timeout 120 python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
  --sizes 98304 --precisions float32 --systems water copper alloy --modes prebuilt_nlist eval --compress \
  --repeat-seconds 1.0 --models $M --out $OUT/run265_bench7.jsonl 2>> $OUT/run265_err7.txt > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run265_bench7.jsonl
el tests
PYTHONPATH=/tmp/site:$PWD:$PWD/tests timeout 150 python3 -m pytest -q -p no:cacheprovider \
  tests/gpu/test_calculator_gpu.py tests/gpu/test_ensemble_gpu.py tests/gpu/test_md_gpu.py tests/gpu/test_tools_gpu.py \
  > $OUT/run265_gpu_tests7.txt 2>&1
tail -3 $OUT/run265_gpu_tests7.txt
el done
