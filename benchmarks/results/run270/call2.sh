#!/bin/bash
# Run 270, call 2 (~9 minutes; carry .mid, .peer and .whl), on the defaults set from call 1: issue 9's prebuilt-list
# rows (98,304 atoms of water, copper and the alloy; water also ~1e6), the MD of 98,304 water atoms (ASE from the
# prelude's /tmp/site), then all of tests/gpu.
source benchmarks/results/call_prelude.sh
el bench
M="water:float32=.mid/water/model.dp copper:float32=.mid/copper/model.dp alloy:float32=.mid/alloy/model.dp"
PYTHONPATH=$PWD timeout 90 python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
  --sizes 98304 --precisions float32 --systems water copper alloy --modes prebuilt_nlist \
  --repeat-seconds 1.0 --models $M --out $OUT/run270_bench2.jsonl 2>> $OUT/run270_err2.txt > /dev/null
PYTHONPATH=$PWD timeout 60 python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
  --sizes 1000000 --precisions float32 --systems water --modes prebuilt_nlist \
  --repeat-seconds 1.0 --models $M --out $OUT/run270_bench2.jsonl 2>> $OUT/run270_err2.txt > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run270_bench2.jsonl
el md
PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/md_bench.py --sizes 98304 --dtype float32 \
  --model .mid/water/model.dp --steps 100 --warmup 20 2>> $OUT/run270_err2.txt | tee $OUT/run270_md2.jsonl
el gpu tests
PYTHONPATH=/tmp/site:$PWD:$PWD/tests timeout 270 python3 -m pytest -q tests/gpu 2>&1 \
  | tee $OUT/run270_gpu_tests2.txt | tail -4
el done
