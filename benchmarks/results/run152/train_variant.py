"""Run 152: train_bench.py with the training embedding kernels' float64 tanh chosen: "plain" (libdevice's exp and
the IEEE division, `embedding._TRAINING_FAST64` False, this tree's default) or "fast64" (the branch-free one).
    python train_variant.py plain|fast64 TRAIN_BENCH_ARGS..."""
import sys

import train_bench
import triton.language as tl

from deeppot.kernels import embedding

embedding._TRAINING_FAST64 = tl.constexpr(sys.argv.pop(1) == "fast64")  # before any kernel compiles
train_bench.main()
