#!/bin/bash
# Run 265 call 4 (one GPU, ~4 minutes; carry .mid, .peer and .whl with ASE's wheel): this tree (the stack at 5
# stages) on the README's trained-model rows: MD of 98,304 water atoms (md_bench.py, plain and compressed), then
# infer_bench.py's prebuilt-list calls of water, copper and the alloy with compressed copies.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
for extra in "" "--compress"; do
  el "md $extra"
  PYTHONPATH=/tmp/site:$PWD:$PWD/benchmarks timeout 100 python3 benchmarks/md_bench.py --sizes 98304 \
    --dtype float32 --model .mid/water/model.dp --steps 100 --warmup 20 $extra 2>> $OUT/run265_err4.txt \
    | tee -a $OUT/run265_md4.jsonl | cut -c1-400
done
el bench
M="water:float32=.mid/water/model.dp copper:float32=.mid/copper/model.dp alloy:float32=.mid/alloy/model.dp"
PYTHONPATH=$PWD timeout 150 python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
  --sizes 98304 --precisions float32 --systems water copper alloy --modes prebuilt_nlist --compress \
  --repeat-seconds 1.0 --models $M --out $OUT/run265_bench4.jsonl 2>> $OUT/run265_err4.txt | cut -c1-200
python3 benchmarks/infer_bench.py --summary $OUT/run265_bench4.jsonl
tail -3 $OUT/run265_err4.txt
el done
