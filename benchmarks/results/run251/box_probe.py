"""Run 251: the f16x3 atom-tile kernels' held weights as one shared-memory tile [hi; lo] a layer, multiplied by two
GEMMs of twice the depth (`atom_tiles.ONE_BOX`, `embedding._mm_stacked`), against two tiles and three GEMMs, in one
process on trained models; `variant_probe.py`'s runner (run 250).

Usage (GPU, repository root): python box_probe.py water=.mid/water/model.dp ... --natoms 98304 --rounds 2
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import atom_tiles

VARIANTS = {"base": {}, "t23": {"t": (2, 3)}, "t23_g2": {"t": (2, 3), "grad": (2,)},
            "t23_g23": {"t": (2, 3), "grad": (2, 3)}, "t2_g2": {"t": (2,), "grad": (2,)}}


def set_box(name):
    atom_tiles.ONE_BOX = VARIANTS[name]


if __name__ == "__main__":
    main(VARIANTS, set_box)
