"""Run 269: whole prebuilt-list calls with dE/dT made by `descriptor_matrix._t_bar_kernel` between the fitting
nets and the gradient kernel (as before), and made by the gradient kernel itself from dE/dD and T at each
program's start (`atom_tiles.FOLD_T_BAR`): the dE/dT kernel (0.37 ms of run 265's 98,304-atom water call) goes, its
work moves into the gradient kernel (sm_90 SASS, water, f16x3 (4, 16, 4): the chunk loop unchanged, 2,513
instructions and 100 B spilled; ~1,400 instructions more a thread once a program); run 250's `variant_probe.py`
runner, the kernels that change profiled.
Usage (GPU, repository root): python fold_ab.py water=.mid/water/model.dp ... --rounds 2
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import atom_tiles

VARIANTS = {"reading": frozenset(), "folded": frozenset({torch.float32})}


def set_variant(name):
    atom_tiles.FOLD_T_BAR = VARIANTS[name]


if __name__ == "__main__":
    main(tuple(VARIANTS), set_variant, keep=("tiled", "_t_bar_kernel", "gemm", "_stack", "_back_scatter"))
