"""Run 253: atom tiles (ATOMS, SLOTS, warps) other than the kept ones, now that the gradient's loop runs without
loop-invariant code motion (ptxas, sm_90, water):
- float64 (kept (2, 8, 4) for both): T (2, 8, 8) 206 registers, no spill; the gradient (1, 8, 2) 12 B spilled,
  (1, 16, 4) 24 B as (2, 8, 4);
- float32 f16x3 (kept (4, 16, 4): T no spill, the gradient 88 B): the gradient (2, 32, 4) 68 B, (4, 32, 8) 44 B;
  T (2, 32, 4) no spill, 3% fewer instructions a loop.
Run 250's `variant_probe.py` runner; pick a precision's variants with --variants.

Usage (GPU, repository root):
    python tile_probe.py water=.mid/water/model64.dp --variants base64 t64_2_8_8 grad64_1_8_2 grad64_1_16_4
    python tile_probe.py water=.mid/water/model.dp --variants base32 grad32_2_32_4 grad32_4_32_8 t32_2_32_4
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import atom_tiles

F64 = {"base64": {"t": (2, 8, 4), "grad": (2, 8, 4)}, "t64_2_8_8": {"t": (2, 8, 8), "grad": (2, 8, 4)},
       "grad64_1_8_2": {"t": (2, 8, 4), "grad": (1, 8, 2)}, "grad64_1_16_4": {"t": (2, 8, 4), "grad": (1, 16, 4)}}
F32 = {"base32": {"t": (4, 16, 4), "grad": (4, 16, 4)}, "grad32_2_32_4": {"t": (4, 16, 4), "grad": (2, 32, 4)},
       "grad32_4_32_8": {"t": (4, 16, 4), "grad": (4, 32, 8)}, "t32_2_32_4": {"t": (2, 32, 4), "grad": (4, 16, 4)}}
VARIANTS = {**F64, **F32}


def set_tiles(name):
    if name in F64:
        atom_tiles.TILES[torch.float64] = dict(F64[name])
    else:
        atom_tiles.F16X3_TILES.clear()
        atom_tiles.F16X3_TILES.update(F32[name])


if __name__ == "__main__":
    main(VARIANTS, set_tiles)
