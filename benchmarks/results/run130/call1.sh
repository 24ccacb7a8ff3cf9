#!/bin/bash
# Run 130 (one H100): the fused fitting products with a tile per epilogue (run 129's fastest), whole calls against
# e57af54 (.old) twice over; more tiles around those; the inference scatter's warps; GPU tests of the fitting.
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run130; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
A="--data .peer/data --inputs .peer/inputs"
el large
for rep in 1 2; do for tree in .old . ; do
  env PYTHONPATH=$PWD/$tree timeout 100 python3 $tree/benchmarks/infer_bench.py $A --systems water copper alloy \
    --precisions float32 --sizes 98304 --modes prebuilt_nlist --compress --repeat-seconds 0.5 \
    | sed "s#^{#{\"tree\": \"$tree\", #" >> $OUT/run130_infer.jsonl 2>> $OUT/run130_err.txt
done; done
python3 -c "
import json
for l in open('$OUT/run130_infer.jsonl'):
    r=json.loads(l); print(r.get('tree'), r.get('case'), r.get('ms_per_call'), r.get('atom_steps_per_s'), r.get('peak_mem_MiB'), r.get('e_per_atom'), r.get('error', ''))"
el sweep
env PYTHONPATH=$PWD timeout 150 python3 benchmarks/results/run130/fitting_gemm_sweep.py > $OUT/run130_sweep.jsonl 2>> $OUT/run130_err.txt
cat $OUT/run130_sweep.jsonl
el scatter
env PYTHONPATH=$PWD timeout 100 python3 benchmarks/results/run130/scatter_sweep.py > $OUT/run130_scatter.jsonl 2>> $OUT/run130_err.txt
cat $OUT/run130_scatter.jsonl
el tests
env PYTHONPATH=$PWD timeout 80 python3 -m pytest -q -x tests/kernels/test_fitting.py > $OUT/run130_gpu_tests.txt 2>&1
tail -3 $OUT/run130_gpu_tests.txt
tail -5 $OUT/run130_err.txt
el done
