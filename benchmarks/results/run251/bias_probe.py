"""Run 251: the f16x3 atom-tile kernels with b2 and b3 as rows of the held W2 and W3 (`atom_tiles.BIAS_ROWS`),
against reading and adding them in every chunk, in one process on trained models; `variant_probe.py`'s runner.
The constant and its code were measured and not kept: `bias_rows.patch` (against cb71e6a) holds them.

Usage (GPU, repository root): python bias_probe.py water=.mid/water/model.dp ... --natoms 98304 --rounds 2
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import atom_tiles

VARIANTS = {"base": False, "bias_rows": True}


def set_bias_rows(name):
    atom_tiles.BIAS_ROWS = VARIANTS[name]


if __name__ == "__main__":
    main(VARIANTS, set_bias_rows)
