"""Run 259: D as float16 parts written by the T kernels for the first fitting layer (`fitting_gemm.X_PARTS`), timed
in one process on trained models against D written whole (float32) and split in every program of the product;
`variant_probe.py`'s runner (run 250), profiling the T, product and dE/dT kernels.

Needs `d_parts.patch` (beside this file) applied: the tree keeps D whole. Per model and variant: the prebuilt-list
call's wall ms (a fresh `DeepPot` each), those kernels' CUDA ms a call (torch.profiler), and the largest deviation
of energy and forces from the first variant's.
Usage (GPU, repository root): python parts_probe.py water=.mid/water/model.dp ... --rounds 2
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import fitting_gemm

VARIANTS = {"whole": (False, None), "parts": (True, dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=2)),
            "parts_bk32": (True, dict(BM=128, BN=128, BK=32, num_warps=8, num_stages=4))}


def set_parts(name):
    fitting_gemm.X_PARTS, tile = VARIANTS[name]
    fitting_gemm.PARTS_TILE = tile or fitting_gemm.PARTS_TILE


if __name__ == "__main__":
    main(VARIANTS, set_parts, keep=("_t_kernel", "_persistent_kernel", "_t_bar_kernel"))
