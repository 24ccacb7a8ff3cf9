"""Run 267 (prepared, not run): whole prebuilt-list calls with the f16x3 atom tiles' (ATOMS, SLOTS, warps) after the
transposed T and reading ahead: both kernels on (4, 16, 4) ("kept"), T on (2, 32, 4) ("t_2x32": sm_90 SASS of
water's loop 1,602 -> 1,576 instructions, none spilled, where run 250 measured the plain T there slower), and both
on (2, 32, 4) ("both_2x32": the gradient 2,513 -> 2,488, spills 100 -> 84 B), and the gradient alone there
("grad_2x32", added in run 268); run 250's `variant_probe.py` runner.
Usage (GPU, repository root): python tile_ab.py water=.mid/water/model.dp ... --rounds 2
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import atom_tiles

VARIANTS = {"kept": ((4, 16, 4), (4, 16, 4)), "t_2x32": ((2, 32, 4), (4, 16, 4)),
            "both_2x32": ((2, 32, 4), (2, 32, 4)), "grad_2x32": ((4, 16, 4), (2, 32, 4))}


def set_variant(name):
    atom_tiles.F16X3_TILES["t"], atom_tiles.F16X3_TILES["grad"] = VARIANTS[name]


if __name__ == "__main__":
    main(tuple(VARIANTS), set_variant, keep=("tiled", "_persistent_kernel", "_stack_kernel", "gemm", "xmma"))
