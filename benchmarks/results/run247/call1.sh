#!/bin/bash
# Run 247 (one GPU): the training step's fitting forward products as f16x3 on small tiles with their elementwise
# work (`fitting_gemm.TrainingProducts`) against .old (c3b2dae: cuBLAS products, then one elementwise kernel a
# layer): GPU tests of the fitting kernels and the graphed step, then train_bench.py --steps 1000, trees alternating.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
ln -sfn $PWD/.peer .old/.peer
el tests
timeout 150 python3 -m pytest -q -x tests/kernels/test_fitting.py tests/gpu/test_graph_step.py > $OUT/run247_gpu_tests.txt 2>&1
tail -4 $OUT/run247_gpu_tests.txt
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
el train
for c in water:float32 water:float32 copper:float32 alloy:float32; do
  for t in . .old; do
    (cd $t && env PYTHONPATH=$PWD:$PWD/benchmarks timeout 45 python3 $B --steps 1000 $c) \
      | sed "s/^{/{\"tree\": \"$t\", /" >> $OUT/run247_train.jsonl 2>> $OUT/run247_err.txt
    tail -n1 $OUT/run247_train.jsonl | grep -o '"tree": "[^"]*"\|"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"rmse_e_val": [0-9.e-]*\|"rmse_f_val": [0-9.e-]*' | tr '\n' ' '; echo
  done
done
grep -h "fitting nets" $OUT/run247_err.txt | sort | uniq -c | head -3
el done
