#!/bin/bash
# Run 100 (one H100): Inductor's GEMM autotuning on the compiled water float32 step, given the whole call (run 75
# stopped it at 200 s before its first step).
set -u
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_MAX_AUTOTUNE_GEMM=1 TORCHINDUCTOR_COMPILE_THREADS=16
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
start=$(date +%s)
env PYTHONPATH=$PWD:$PWD/benchmarks timeout 560 python3 $B water:float32:compile >> $OUT/run100_train.jsonl 2>> $OUT/run100_err.txt
echo "rc $? after $(( $(date +%s) - start )) s"
tail -qn1 $OUT/run100_train.jsonl | cut -c1-400
grep -c "AUTOTUNE" $OUT/run100_err.txt
grep -A3 "AUTOTUNE" $OUT/run100_err.txt | head -40
gzip -f $OUT/run100_err.txt
