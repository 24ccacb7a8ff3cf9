#!/bin/bash
# Run 191: where an eager MD step goes beyond the evaluation (md_timeline.py: 98,304 water atoms, float32 and
# float64), and where the compiled water float32 training step goes (train_bench --profile). Carry [".whl", ".peer"].
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:$PWD/benchmarks:/tmp/site
T0=$(date +%s)
for p in float32 float64; do
  timeout 150 python3 benchmarks/results/run191/md_timeline.py $OUT $p 98304 2>&1 | grep -v USDT \
    | tee $OUT/run191_md_timeline_$p.txt
  echo "== $(( $(date +%s) - T0 )) s"
done
timeout 120 python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs --profile water:float32:compile \
  > $OUT/run191_profile_water_f32_compile.txt 2>&1
head -45 $OUT/run191_profile_water_f32_compile.txt
echo "== $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
