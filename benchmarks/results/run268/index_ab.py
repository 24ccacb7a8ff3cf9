"""Run 268: whole prebuilt-list calls with the pair data's owners and types as int64 (before run 268) or int32
(`pairs.INDEX`), run 250's `variant_probe.py` runner; the kernels that store or read them profiled.
Usage (GPU, repository root): python index_ab.py water=.mid/water/model.dp ... --rounds 2
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import pairs

VARIANTS = {"int64": torch.int64, "int32": torch.int32}


def set_variant(name):
    pairs.INDEX = VARIANTS[name]


if __name__ == "__main__":
    main(tuple(VARIANTS), set_variant, keep=("_pairs_kernel", "_reach_kernel", "_back_scatter", "tiled"))
