#!/bin/bash
# Run 105 (one H100), issue 11: the graphed force-training pass with the fused embedding kernels, PyTorch's eager
# embedding, and PyTorch's with its jet or its whole nets under torch.compile (benchmarks/embed_compile_bench.py).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
timeout 400 python3 benchmarks/embed_compile_bench.py water:float64 water:float32 copper:float32 --data .peer/data \
  --inputs .peer/inputs 2> $OUT/run105_err.txt | tee $OUT/run105_embed_compile.jsonl
tail -5 $OUT/run105_err.txt
