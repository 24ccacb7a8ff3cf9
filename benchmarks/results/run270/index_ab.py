"""Run 270: whole prebuilt-list calls on the final tree (the fold, the rows in the pair data and the two-warp
scatter removed), owners and types int64 against int32 (`pairs.INDEX`, int32 the default since call 1); run 250's
`variant_probe.py` runner.
Usage (GPU, repository root): python index_ab.py water=.mid/water/model.dp ... --rounds 3
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
