"""Run 266: whole prebuilt-list calls with the f16x3 T kernel's last layer and contraction transposed
(`atom_tiles.TRANSPOSED_T`, "transposed": G^T @ R on a warp-group GEMM with G^T in registers) and without ("base":
R^T @ G on mma.sync); run 250's `variant_probe.py` runner.
Usage (GPU, repository root): python transposed_ab.py water=.mid/water/model.dp ... --rounds 2
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import atom_tiles

VARIANTS = {"base": False, "transposed": True}


def set_variant(name):
    atom_tiles.TRANSPOSED_T = VARIANTS[name]


if __name__ == "__main__":
    main(tuple(VARIANTS), set_variant, keep=("tiled", "_persistent_kernel", "_stack_kernel", "gemm", "xmma"))
