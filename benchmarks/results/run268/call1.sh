#!/bin/bash
# Run 268, call 1 (~7 minutes; carry .mid, .peer and .whl): run 267's call5.sh (the atom tiles re-timed on the
# transposed T reading ahead) and the two rows of its call4.sh that did not need the test suite: MD of 98,304 water
# atoms and issue 9's ~1e6-atom water row.
source benchmarks/results/call_prelude.sh
el tiles
PYTHONPATH=$PWD:$PWD/benchmarks timeout 240 python3 benchmarks/results/run267/tile_ab.py \
  water=.mid/water/model.dp copper=.mid/copper/model.dp alloy=.mid/alloy/model.dp --rounds 2 --calls 10 \
  2>> $OUT/run268_err1.txt | tee $OUT/run268_tiles1.jsonl | cut -c1-300
el md
PYTHONPATH=/tmp/site:$PWD timeout 100 python3 benchmarks/md_bench.py --sizes 98304 --dtype float32 \
  --model .mid/water/model.dp --steps 100 --warmup 20 2>> $OUT/run268_err1.txt | tee $OUT/run268_md1.jsonl
el bench
PYTHONPATH=$PWD timeout 80 python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
  --sizes 1000000 --precisions float32 --systems water --modes prebuilt_nlist --repeat-seconds 1.0 \
  --models water:float32=.mid/water/model.dp --out $OUT/run268_bench1.jsonl 2>> $OUT/run268_err1.txt > /dev/null
python3 benchmarks/infer_bench.py --summary $OUT/run268_bench1.jsonl
el done
