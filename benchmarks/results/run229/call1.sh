#!/bin/bash
# Run 229: GPU tests of inference on 18a255f (the previous session's last change, checked on a CPU only); the
# host's steps of a call on this machine's CPU (host_probe.py; run 222's call_steps.py, 12,288 and 98,304 water
# atoms, float32). Carry [".whl", ".peer"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_infer.py \
  tests/gpu/test_calculator_gpu.py 2>&1 | tail -2 | tee $OUT/run229_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
(nproc; lscpu | grep -i "model name") | tee $OUT/run229_host_probe.txt
PYTHONPATH=$PWD timeout 60 python3 benchmarks/results/run229/host_probe.py 2>&1 | tee -a $OUT/run229_host_probe.txt
for reps in 4 8 4 8; do
  PYTHONPATH=$PWD:$PWD/benchmarks timeout 60 python3 benchmarks/results/run222/call_steps.py float32 $reps 2>&1 \
    | grep atoms | tee -a $OUT/run229_call_steps.txt
done
echo "== $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
