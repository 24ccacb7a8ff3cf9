#!/bin/bash
# Run 61 (one H100): the compiled step (forces and loss under torch.compile) with trimmed lists, new and
# .old (459715e) in the same call, 1000 steps per case; water float64 3000 steps with --test (all validation frames).
set -u
export PYTHONUNBUFFERED=1
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --steps 1000"
for c in alloy:float32:compile water:float32:compile copper:float32:compile; do
  env PYTHONPATH=$PWD:$PWD/benchmarks python3 $B $c >> $OUT/run61_train.jsonl 2>> $OUT/run61_err.txt
  env PYTHONPATH=$PWD/.old:$PWD/.old/benchmarks python3 .old/$B $c >> $OUT/run61_train_before.jsonl 2>> $OUT/run61_err.txt
  tail -qn1 $OUT/run61_train.jsonl $OUT/run61_train_before.jsonl | cut -c1-110
done
env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs \
    --steps 3000 --test water:float64 >> $OUT/run61_train.jsonl 2>> $OUT/run61_err.txt
tail -n1 $OUT/run61_train.jsonl | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); print(r['case'], r.get('ms_per_step'), r.get('dp_test_validation'))"
