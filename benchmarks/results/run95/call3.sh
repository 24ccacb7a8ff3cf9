#!/bin/bash
# Run 98 (one H100): the inference tf32 opt-in through the fitting GEMMs: speed at ~100k atoms (this tree against
# 6fa0c4d, .old, whose tf32 reached the embedding kernels only) and its error against float64.
set -u
export PYTHONUNBUFFERED=1
A="--systems water copper --precisions float32 --sizes 98304 --modes prebuilt_nlist --data .peer/data --inputs .peer/inputs"
env PYTHONPATH=$PWD timeout 240 python3 benchmarks/infer_bench.py $A --paths auto tf32 --compress \
  --out $OUT/run98_infer.jsonl > /dev/null 2>> $OUT/run98_err.txt
env PYTHONPATH=$PWD/.old timeout 120 python3 .old/benchmarks/infer_bench.py $A --paths tf32 \
  | sed 's#^{#{"tree": ".old", #' >> $OUT/run98_infer.jsonl 2>> $OUT/run98_err.txt
python3 -c "
import json
for line in open('$OUT/run98_infer.jsonl'):
    r = json.loads(line)
    print(r.get('tree', '.'), r['case'], r.get('path'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', ''))"
env PYTHONPATH=$PWD timeout 150 python3 benchmarks/results/run95/tf32_accuracy.py .peer/data > $OUT/run98_accuracy.jsonl 2>> $OUT/run98_err.txt
cat $OUT/run98_accuracy.jsonl
tail -3 $OUT/run98_err.txt
