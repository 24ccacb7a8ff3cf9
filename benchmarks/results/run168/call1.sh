#!/bin/bash
# Run 168: the float64 atom-tile kernels reading shared rows (rows_f64.py) against computing them (run 128's
# profile), twice; then 1,000,000 water atoms, float32, uncompressed and compressed, through infer_bench.py.
# Run from the repository root with carry [".peer"].
set -u
export PYTHONUNBUFFERED=1
mkdir -p /tmp/r168
for rep in 1 2; do
  for probe in benchmarks/results/run168/rows_f64.py benchmarks/results/run128/infer_kernels.py; do
    echo "## $probe" >> $OUT/run168_kernels.txt
    timeout 100 env PYTHONPATH=$PWD python3 $probe /tmp/r168 >> $OUT/run168_kernels.txt 2>> $OUT/run168_err.txt
  done
done
grep -E "^##|^==|_tiled_|_back_|_env_rows_" $OUT/run168_kernels.txt
timeout 200 env PYTHONPATH=$PWD python3 benchmarks/infer_bench.py --data .peer/data --inputs .peer/inputs \
  --systems water --precisions float32 --sizes 1000000 --modes prebuilt_nlist --repeat-seconds 0.5 --compress \
  >> $OUT/run168_infer.jsonl 2>> $OUT/run168_err.txt
cat $OUT/run168_infer.jsonl
tail -3 $OUT/run168_err.txt
