#!/bin/bash
# Run 174: 450444a (the fitting products with W's parts made once and the column tiles side by side) against
# 1e836d9 (.old): whole calls (water and copper, float32, compressed too), trees alternating three times; the
# fitting tiles swept again in the new launch order (run 172's gemm_variants.py); the gradient tiles run 173 hinted
# at (grad_tiles.py); the kernel profile of a water call (run 128's infer_kernels.py).
# Run from the repository root with carry [".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=benchmarks/results
el infer
A="--data .peer/data --inputs .peer/inputs"
for tree in . .old . .old . .old; do
  timeout 70 env PYTHONPATH=$PWD/$tree python3 $tree/benchmarks/infer_bench.py $A --systems water copper \
    --precisions float32 --sizes 98304 --modes prebuilt_nlist --repeat-seconds 0.5 --compress \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run174_infer.jsonl 2>> $OUT/run174_err.txt
done
python3 -c "
import json
for l in open('$OUT/run174_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', ''))"
el tiles
timeout 100 env PYTHONPATH=$PWD:$PWD/benchmarks python3 $R/run174/grad_tiles.py > $OUT/run174_tiles.jsonl 2>> $OUT/run174_err.txt
cat $OUT/run174_tiles.jsonl
el products sweep
timeout 150 env PYTHONPATH=$PWD python3 $R/run172/gemm_variants.py new --sweep > $OUT/run174_products.jsonl 2>> $OUT/run174_err.txt
python3 -c "
import json
for l in open('$OUT/run174_products.jsonl'):
    r = json.loads(l); print(r['rows'], r['product'], r['tile'], r['ms'])"
el profile
mkdir -p /tmp/prof
timeout 150 env PYTHONPATH=$PWD:$PWD/benchmarks python3 $R/run128/infer_kernels.py /tmp/prof > $OUT/run174_kernels.txt 2>> $OUT/run174_err.txt
head -30 $OUT/run174_kernels.txt
el done
tail -5 $OUT/run174_err.txt
