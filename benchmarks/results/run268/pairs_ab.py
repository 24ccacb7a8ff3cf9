"""Run 268: whole prebuilt-list calls with the pair data as before (owners and types int64, the rows made by
`env_rows.env_rows_once`), with owners and types as int32 (`pairs.INDEX`), with the rows made by the pair-data
kernel too (`descriptor.ROWS_IN_PAIRS`), and each with half the pairs a program (`pairs.BLOCK` 512: sm_90 SASS, 64
registers a thread against 128 at 1,024, 72 against 164 with the rows, so twice the warps a multiprocessor for
its chains of dependent gathers); run 250's `variant_probe.py` runner, the kernels that change profiled.
Usage (GPU, repository root): python pairs_ab.py water=.mid/water/model.dp ... --rounds 2
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import descriptor, pairs

VARIANTS = {"int64": (torch.int64, False, 1024), "int32": (torch.int32, False, 1024),
            "int32_rows": (torch.int32, True, 1024), "int32_512": (torch.int32, False, 512),
            "int32_rows_512": (torch.int32, True, 512)}


def set_variant(name):
    pairs.INDEX, descriptor.ROWS_IN_PAIRS, pairs.BLOCK = VARIANTS[name]


if __name__ == "__main__":
    main(tuple(VARIANTS), set_variant,
         keep=("_pairs_kernel", "_env_rows_kernel", "_reach_kernel", "_back_scatter", "tiled"))
