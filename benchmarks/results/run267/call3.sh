#!/bin/bash
# Run 267 call 3 as it ran (one GPU, warm after call 2, 125 s; carry .mid, .peer and .whl): MD of 98,304 water atoms
# and the rest of tests/gpu on the new defaults. The MD line failed at once: its PYTHONPATH lacked /tmp/site, where
# the prelude installs ASE (run267_md3_err.txt); the tests ran until their 120 s timeout (12 passed, none failed).
# Next time: PYTHONPATH=/tmp/site:$PWD for md_bench.py, and some 260 s for the tests (run 265: 257 s for tests/gpu).
source benchmarks/results/call_prelude.sh; el md; PYTHONPATH=$PWD timeout 80 python3 benchmarks/md_bench.py --sizes 98304 --dtype float32 --model .mid/water/model.dp --steps 100 --warmup 20 2>> $OUT/run267_err3.txt | tee $OUT/run267_md3.jsonl; el tests; PYTHONPATH=/tmp/site:$PWD:$PWD/tests timeout 120 python3 -m pytest -q tests/gpu --ignore=tests/gpu/test_infer.py -x 2>&1 | tee $OUT/run267_gpu_tests3.txt | tail -4; el done
