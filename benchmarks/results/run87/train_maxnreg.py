"""Run 87: the training step with a register cap on the fused embedding kernels (forward and backward).

    MAXNREG=168 PYTHONPATH=$PWD:$PWD/benchmarks python benchmarks/results/run87/train_maxnreg.py [train_bench args]
"""
import os
import runpy
import sys

from deeppot.kernels import embedding

cap = int(os.environ.get("MAXNREG", "0"))
if cap:
    _meta = embedding._launch_meta

    def capped(*args, **kwargs):
        return dict(_meta(*args, **kwargs), maxnreg=cap)
    embedding._launch_meta = capped

sys.argv = ["train_bench.py", *sys.argv[1:]]
runpy.run_path(os.path.join(os.path.dirname(__file__), "..", "..", "train_bench.py"), run_name="__main__")
