"""Run 252: the float32 atom-tile kernels with tanh's factor, the products' scale and the bias folded into one
multiply-add (and T's skip into tanh's constant; `atom_tiles.PRESCALED`), against the kernels without it, in one
process on trained models; `variant_probe.py`'s runner (run 250).

Usage (GPU, repository root): python prescale_probe.py water=.mid/water/model.dp ... --natoms 98304 --rounds 2
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import atom_tiles

VARIANTS = {"base": False, "prescaled": True}


def set_prescaled(name):
    atom_tiles.PRESCALED = VARIANTS[name]


if __name__ == "__main__":
    main(VARIANTS, set_prescaled)
