"""Run 250 call 3: the float32 (f16x3) atom-tile kernels reading W2's and W3's parts by TMA descriptors straight
into shared memory (`atom_tiles.TMA`), against loads through registers, in one process on trained models.
Call 3 loaded them by TMA in every chunk (not kept); call 4 once a net, kept as `atom_tiles.HOLD_WEIGHTS`, the
constant this probe set as `TMA` then (to run it again, set `HOLD_WEIGHTS`).

Usage (GPU, repository root): python tma_probe.py water=.mid/water/model.dp ... --natoms 98304 --rounds 3
Per model and variant: the prebuilt-list call's wall ms (a fresh DeepPot per variant), each fused kernel's CUDA ms
a call (torch.profiler), and the largest deviation of energy and forces from the base variant's.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from variant_probe import main

from deeppot.kernels import atom_tiles

VARIANTS = {"base": False, "tma": True}


def set_tma(name):
    atom_tiles.TMA = VARIANTS[name]


if __name__ == "__main__":
    main(VARIANTS, set_tma)
