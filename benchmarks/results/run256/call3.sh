#!/bin/bash
# Run 256, call 3 (one GPU): the session's final tree (".": the training products over a long k split into parts,
# SPLIT_K fill 2.0; T and D in one kernel each way for float32 descriptors) against 720688d (".old", the session's
# start): GPU tests of the changed kernels and the force path; train_bench (fused, 1000 steps, water/copper/alloy
# float32, water float64), two rounds alternating; a profile of "."'s water float32 step; DeePMD-kit 3.2.0's float32
# cases (pt backend, 500 steps, its "average training time") in the same call.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
R=$PWD
ln -sfn $PWD/.peer .old/.peer
el "tests"
timeout 150 python3 -m pytest -q tests/kernels/test_descriptor_training.py tests/kernels/test_descriptor_matrix.py \
  tests/gpu/test_force_path_gpu.py 2>&1 | tail -2
timeout 90 python3 -m pytest -q tests/kernels/test_fitting.py -k "training or counters" 2>&1 | tail -1
train() {  # tree round
  el "train $1 round $2"
  (cd $1 && PYTHONPATH=$PWD timeout 100 python3 $R/benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
    --steps 1000 water:float32:fused copper:float32:fused alloy:float32:fused water:float64:fused) \
    2>> $OUT/run256_err3.txt | sed "s/^{/{\"tree\": \"$1\", \"round\": $2, /" | tee -a $OUT/run256_call3.jsonl \
    | grep -o '"case": "[^"]*"\|"ms_per_step": [0-9.]*\|"rmse_f_val": [0-9.]*\|"launch_to_first_step_s": [0-9.]*' \
    | tr '\n' ' '
  echo
}
train . 1; train .old 1; train .old 2; train . 2
el "profile"
PYTHONPATH=$PWD timeout 60 python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000 \
  --profile water:float32:fused > $OUT/run256_profile3.txt 2>&1
head -16 $OUT/run256_profile3.txt | cut -c1-110
trace=$(grep -o '/tmp/bench-water[^ ]*timeline.json' $OUT/run256_profile3.txt | head -1)
python3 benchmarks/results/run256/kernels_of_step.py "$trace" 5 > $OUT/run256_kernels3.txt 2>&1
tail -1 $OUT/run256_kernels3.txt
[ $(( $(date +%s) - T0 )) -gt 380 ] && { el "skip deepmd-kit"; exit 0; }
el deepmd-kit
OUT=$OUT/peer timeout 200 bash .peer/peer/deepmd_train.sh .peer/data .peer/inputs .peer/whl 500 \
  water:pt:float32 copper:pt:float32 alloy:pt:float32 > $OUT/run256_peer.txt 2>&1
grep -v "^WARNING" $OUT/run256_peer.txt
el done
