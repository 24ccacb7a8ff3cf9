#!/bin/bash
# Run 242 (one H100): the f16x3 training kernels (this tree) after 3000 steps on every validation frame, the compiled
# water step against .old (02c92de), a profile of the default water float32 step, and the remaining GPU tests.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
B="benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
ln -sfn $PWD/.peer .old/.peer
el accuracy
env PYTHONPATH=$PWD:$PWD/benchmarks timeout 150 python3 $B --steps 3000 --test water:float32 copper:float32 \
  >> $OUT/run242_train.jsonl 2>> $OUT/run242_err.txt
el compiled
for t in . .old . .old; do
  (cd $t && env PYTHONPATH=$PWD:$PWD/benchmarks timeout 100 python3 $B --steps 1000 water:float32:compile) \
    | sed "s/^{/{\"tree\": \"$t\", /" >> $OUT/run242_train.jsonl 2>> $OUT/run242_err.txt
done
python3 -c "
import json
for l in open('$OUT/run242_train.jsonl'):
    r=json.loads(l); print(r.get('tree','.'), r['case'], r.get('ms_per_step'), str(r.get('final', r.get('error','')))[:300])"
el profile
env PYTHONPATH=$PWD:$PWD/benchmarks timeout 100 python3 $B --steps 300 --profile water:float32 \
  > $OUT/run242_profile.txt 2>> $OUT/run242_err.txt
head -c 3000 $OUT/run242_profile.txt
el tests
timeout 330 python3 -m pytest -q tests/kernels tests/gpu --ignore tests/kernels/test_embedding.py --ignore tests/kernels/test_precision.py \
  --ignore tests/gpu/test_force_path_gpu.py > $OUT/run242_gpu_tests.txt 2>&1
tail -25 $OUT/run242_gpu_tests.txt
el done
