"""Run 268: whole prebuilt-list calls with `scatter.back_and_scatter` on one warp a centre (before run 268) or two
(`scatter.BACK_SCATTER_WARPS`: sm_90 SASS, 128 registers a thread against 63, so twice the warps a multiprocessor);
run 250's `variant_probe.py` runner, the scatter and tile kernels profiled.
Usage (GPU, repository root): python scatter_ab.py water=.mid/water/model.dp ... --rounds 2
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import scatter

VARIANTS = {"one_warp": 1, "two_warps": 2}


def set_variant(name):
    scatter.BACK_SCATTER_WARPS = VARIANTS[name]


if __name__ == "__main__":
    main(tuple(VARIANTS), set_variant, keep=("_back_scatter", "tiled"))
