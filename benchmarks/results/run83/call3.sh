#!/bin/bash
# Run 85 (one H100): the kernels of runs 83-84 at other sizes: 192 and 12,288 water atoms (prebuilt list and CUDA
# graph) for this tree and 46bc51a (.old); 1,000,000 atoms (peak memory) for this tree; compressed copies too.
set -u
export PYTHONUNBUFFERED=1
show() { grep "\"$1\"" $OUT/run85_infer.jsonl | python3 -c "
import json,sys
for l in sys.stdin:
    r=json.loads(l); print(r['tree'], r['case'], r.get('mode'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('error',''))"; }
for tree in . .old; do
  env PYTHONPATH=$PWD/$tree timeout 200 python3 $tree/benchmarks/infer_bench.py --systems water \
    --precisions float32 float64 --sizes 192 12288 --modes prebuilt_nlist graphed --compress --data .peer/data \
    --inputs .peer/inputs 2>>$OUT/run85_err.txt | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run85_infer.jsonl
  show $tree
done
env PYTHONPATH=$PWD timeout 250 python3 benchmarks/infer_bench.py --systems water --precisions float32 \
  --sizes 1000000 --modes prebuilt_nlist --compress --data .peer/data --inputs .peer/inputs 2>>$OUT/run85_err.txt \
  | sed "s#^{#{\"tree\": \"new1M\", #" >> $OUT/run85_infer.jsonl
show new1M
