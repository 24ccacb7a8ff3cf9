#!/bin/bash
# Run 145 (one H100): f16x3 with each k step's products summed apart (the fitting products' accuracy, probe);
# the schemes' errors against float64 (products_accuracy.py); whole calls, f16x3 (auto) against tf32x3, two rounds.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run145; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
A="--data .peer/data --inputs .peer/inputs"
el gemm
timeout 150 env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/results/run144/f16_probe.py gemm \
  > $OUT/run145_gemm.jsonl 2>> $OUT/run145_err.txt
python3 -c "
import json
for l in open('$OUT/run145_gemm.jsonl'):
    r=json.loads(l); t=r['tile']; print(r['product'][:8], r['precision'], t['BM'], t['BN'], t['BK'], t['num_warps'], r.get('ms'), r.get('dev'), r.get('error','')[:80])"
el accuracy
timeout 150 env PYTHONPATH=$PWD:/tmp/site python3 benchmarks/results/run145/products_accuracy.py .peer/data \
  > $OUT/run145_accuracy.jsonl 2>> $OUT/run145_err.txt
cat $OUT/run145_accuracy.jsonl
el infer
for round in 1 2; do
  timeout 150 env PYTHONPATH=$PWD python3 benchmarks/infer_bench.py $A --systems water copper alloy \
    --precisions float32 --sizes 98304 --modes prebuilt_nlist --paths auto tf32x3 --compress --repeat-seconds 0.5 \
    | sed "s#^{#{\"round\": $round, #" >> $OUT/run145_infer.jsonl 2>> $OUT/run145_err.txt
done
timeout 60 env PYTHONPATH=$PWD python3 benchmarks/infer_bench.py $A --systems water --precisions float32 \
  --sizes 192 --modes graphed --paths auto tf32x3 --compress --repeat-seconds 0.5 \
  | sed "s#^{#{\"round\": 3, #" >> $OUT/run145_infer.jsonl 2>> $OUT/run145_err.txt
python3 -c "
import json
for l in open('$OUT/run145_infer.jsonl'):
    r=json.loads(l); print(r.get('round'), r.get('case'), r.get('path'), r.get('mode'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('e_per_atom'), r.get('peak_mem_MiB'), r.get('error', ''))"
tail -5 $OUT/run145_err.txt
el done
