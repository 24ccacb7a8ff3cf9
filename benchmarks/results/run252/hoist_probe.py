"""Run 252: the atom-tile gradient kernel with its chunk loop's loop-invariant code motion off
(`atom_tiles.GRAD_HOIST` False: ptxas spills less) against on, in one process on trained models (float64: the same
weights cast, `io.model_file.cast_model`); run 250's `variant_probe.py` runner.

Usage (GPU, repository root): python hoist_probe.py water=.mid/water/model.dp ... --natoms 98304 --rounds 2
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import atom_tiles

VARIANTS = {"hoist": True, "no_hoist": False}


def set_hoist(name):
    atom_tiles.GRAD_HOIST = VARIANTS[name]


if __name__ == "__main__":
    main(VARIANTS, set_hoist)
