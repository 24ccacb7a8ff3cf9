#!/bin/bash
# Run 94 (one H100): GPU tests (FlatAdam, --tf32 through cuBLAS); FlatAdam's gradient copy, cat against
# _foreach_copy_; --tf32 training steps of this tree (compiled water and copper, uncompiled water), 3000 steps with
# the final model tested on all validation frames, against the same cases without --tf32.
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
timeout 200 python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/kernels/test_adam.py \
  tests/gpu/test_graph_step.py tests/gpu/test_force_path_gpu.py > $OUT/run94_gpu_tests.txt 2>&1
tail -4 $OUT/run94_gpu_tests.txt
timeout 60 python3 benchmarks/results/run92/copy_parts.py > $OUT/run94_copy.jsonl 2>>$OUT/run94_err.txt
cat $OUT/run94_copy.jsonl
for c in water:float32:compile:tf32 water:float32:compile copper:float32:compile:tf32 water:float32:tf32 \
         water:float32; do
  DEEPPOT_BENCH_T_LAUNCH=$(date +%s.%N) timeout 150 python3 benchmarks/train_bench.py --case $c --data .peer/data \
    --inputs .peer/inputs --steps 3000 --test 2>>$OUT/run94_err.txt | grep RESULT | sed "s#^RESULT ##" \
    >> $OUT/run94_train.jsonl
  tail -qn1 $OUT/run94_train.jsonl | python3 -c "
import json,sys
r=json.loads(sys.stdin.read()); print(r['case'], r.get('ms_per_step'), r.get('launch_to_first_step_s'), str(r.get('dp_test_validation', ''))[:200], str(r.get('final', r.get('error', '')))[:150])"
done
