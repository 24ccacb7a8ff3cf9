"""Run 271 (prepared in run 270): whole prebuilt-list calls with dE/dT made from dE/dD that cuBLAS wrote and the
dE/dT kernel read back (as before), and made straight from each type's fitting gradient parts
(`descriptor.T_BAR_FROM_FITTING_GRAD`, `descriptor_matrix.t_bar_from_fitting_grad`: the GEMM on wgmma and the
contraction with T in one kernel, dE/dD never stored) on several tiles (sm_90 SASS, water's net: (64, 256, 64) 226
registers, (64, 128, 64) 171, (128, 128, 64) 244, (128, 64, 64) 176, (64, 128, 32) four stages 165; none spills);
run 250's `variant_probe.py` runner, the kernels that change profiled.
Usage (GPU, repository root): python gz_ab.py water=.mid/water/model.dp copper=.mid/copper/model.dp --rounds 2
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import descriptor, descriptor_matrix

TILE = dict(descriptor_matrix.GZ_TILE)
VARIANTS = {"reading": None, "gz_64_256": dict(BM=64, COLUMNS=256), "gz_64_128": dict(BM=64, COLUMNS=128),
            "gz_128_128": dict(BM=128, COLUMNS=128), "gz_128_64": dict(BM=128, COLUMNS=64),
            "gz_64_128_k32": dict(BM=64, COLUMNS=128, BK=32, stages=4)}


def set_variant(name):
    descriptor.T_BAR_FROM_FITTING_GRAD = VARIANTS[name] is not None
    descriptor_matrix.GZ_TILE = dict(TILE, **(VARIANTS[name] or {}))


if __name__ == "__main__":
    main(tuple(VARIANTS), set_variant, keep=("_gz_t_bar", "_t_bar_kernel", "gemm", "_stack", "tiled"))
