"""Run 250 call 5: tiles (ATOMS, SLOTS, warps) of the float32 (f16x3) atom-tile kernels with W2 and W3 held in
shared memory (`atom_tiles.HOLD_WEIGHTS`), in one process on trained models; variant "T/grad" sets both kernels.

Usage (GPU, repository root): python tile_probe.py water=.mid/water/model.dp ... --natoms 98304 --rounds 2
Per model and variant: the prebuilt-list call's wall ms (a fresh DeepPot per variant), each fused kernel's CUDA ms
a call (torch.profiler), and the largest deviation of energy and forces from the base variant's.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from variant_probe import main

from deeppot.kernels import atom_tiles

VARIANTS = {"4,16,4/4,16,4": ((4, 16, 4), (4, 16, 4)), "2,32,4/2,32,4": ((2, 32, 4), (2, 32, 4)),
            "4,32,8/4,32,8": ((4, 32, 8), (4, 32, 8)), "8,16,8/8,16,8": ((8, 16, 8), (8, 16, 8))}


def set_tiles(name):
    atom_tiles.F16X3_TILES.update(zip(("t", "grad"), VARIANTS[name], strict=True))


if __name__ == "__main__":
    main(VARIANTS, set_tiles)
