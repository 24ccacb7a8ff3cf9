#!/bin/bash
# Run 69 (one H100), at HEAD: where the default (uncompiled) training steps go (water f64/f32, copper f32; profiles
# with the top 30 kernels and the water f64 trace), the start-up pieces (import torch, CUDA context, deeppot's
# imports), and a kernel-level profile of the 98,304-atom water evaluations (issue 9).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=$OUT/tmp; mkdir -p $TMPDIR
B="env PYTHONPATH=$PWD:$PWD/benchmarks python3 benchmarks/train_bench.py --data .peer/data --inputs .peer/inputs"
python3 -c "
import time; t=time.time(); import torch; t1=time.time(); torch.cuda.init(); torch.empty(1, device='cuda'); t2=time.time()
import deeppot.cli.main, deeppot.train.trainer; t3=time.time()
print(f'import torch {t1-t:.2f} s, CUDA context {t2-t1:.2f} s, deeppot imports {t3-t2:.2f} s')" 2>&1 | tail -1 | tee $OUT/run69_imports.txt
for c in water:float64 water:float32 copper:float32; do
  name=$(echo $c | tr : _)
  $B --profile $c > $OUT/run69_profile_$name.txt 2>&1
  grep -v -i "warn" $OUT/run69_profile_$name.txt | grep -A34 "^profile of" | cut -c1-120
done
f=$(ls -t $TMPDIR/bench-water-*/timeline.json | tail -1); gzip -c $f > $OUT/run69_timeline_water64.json.gz
ls -la $OUT
timeout 200 env PYTHONPATH=$PWD python3 benchmarks/results/run69/infer_kernels.py $TMPDIR > $OUT/run69_infer_kernels.txt 2>&1
grep -v -i warn $OUT/run69_infer_kernels.txt | cut -c1-110
rm -rf $TMPDIR
