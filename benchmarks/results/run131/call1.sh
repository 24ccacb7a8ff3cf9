#!/bin/bash
# Run 131 (one H100): the fused fitting products in float64 against cuBLAS (fitting_gemm_f64.py); the compressed
# kernels' tiles swept again on the present code (benchmarks/compress_tiles.py).
set -u
export PYTHONUNBUFFERED=1
export TMPDIR=/tmp/run131; mkdir -p $TMPDIR
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
el f64
env PYTHONPATH=$PWD timeout 150 python3 benchmarks/results/run131/fitting_gemm_f64.py > $OUT/run131_f64.jsonl 2>> $OUT/run131_err.txt
cat $OUT/run131_f64.jsonl
el tiles
env PYTHONPATH=$PWD:$PWD/benchmarks timeout 300 python3 benchmarks/compress_tiles.py --data .peer/data --inputs .peer/inputs \
  --tiles 1,8,4 1,16,4 8,2,4 4,4,4 1,8,2 1,16,2 2,8,2 1,32,4 4,4,2 > $OUT/run131_tiles.jsonl 2>> $OUT/run131_err.txt
cat $OUT/run131_tiles.jsonl
tail -5 $OUT/run131_err.txt
el done
