#!/bin/bash
# Prepared in run 267, not run (no device time left): what calls 2 and 3 missed, on the new defaults (~8 minutes;
# carry .mid, .peer and .whl). MD of 98,304 water atoms (ASE from the prelude's /tmp/site), issue 9's ~1e6-atom water
# row (its models given per system), then all of tests/gpu (run 265: 257 s).
source benchmarks/results/call_prelude.sh
el md
PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/md_bench.py --sizes 98304 --dtype float32 \
  --model .mid/water/model.dp --steps 100 --warmup 20 2>> $OUT/run267_err4.txt | tee $OUT/run267_md4.jsonl
el bench
PYTHONPATH=$PWD timeout 80 python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
  --sizes 1000000 --precisions float32 --systems water --modes prebuilt_nlist --repeat-seconds 1.0 \
  --models water:float32=.mid/water/model.dp --out $OUT/run267_bench4.jsonl 2>> $OUT/run267_err4.txt > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run267_bench4.jsonl
el gpu tests
PYTHONPATH=/tmp/site:$PWD:$PWD/tests timeout 300 python3 -m pytest -q tests/gpu 2>&1 \
  | tee $OUT/run267_gpu_tests4.txt | tail -4
el done
