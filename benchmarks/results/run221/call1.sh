#!/bin/bash
# Run 221: GPU tests of inference after the call's host work and copies were trimmed (one pass over the list fewer
# for one frame, plans and the centres of each type kept, inputs copied in only when they change); run 220's
# call_split.py on this tree and on 95cd098 (.old), alternating, water float32 98,304 and 12,288 atoms; this
# tree's profile of both. Carry [".whl", ".peer", ".old"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
ROOT=$PWD
T0=$(date +%s)
PYTHONPATH=/tmp/site timeout 300 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_infer.py tests/infer \
  tests/kernels/test_cell_pairs.py tests/gpu/test_md_gpu.py 2>&1 | tail -4 | tee $OUT/run221_gpu_tests.txt
echo "== tests $(( $(date +%s) - T0 )) s"
P=$ROOT/benchmarks/results/run220/call_split.py
for round in 1 2; do
  for tree in . .old; do
    for reps in 8 4; do
      (cd $tree && PYTHONPATH=$PWD:$PWD/benchmarks timeout 60 python3 $P float32 $reps 2>&1 | grep -v Warn \
        | sed "s|^|$tree r$round |" | tee -a $OUT/run221_call_split.txt)
    done
  done
  echo "== round $round $(( $(date +%s) - T0 )) s"
done
for reps in 8 4; do
  PYTHONPATH=$PWD:$PWD/benchmarks timeout 90 python3 $P float32 $reps profile > $OUT/run221_profile_$reps.txt 2>&1
  cp /tmp/trace_float32_$reps.json $OUT/
done
gzip $OUT/*.json
nvidia-smi --query-gpu=name --format=csv,noheader
