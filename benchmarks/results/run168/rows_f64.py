"""Run 168: run 128's kernel profile (benchmarks/results/run128/infer_kernels.py) with the float64 atom-tile kernels
reading the shared rows too (`atom_tiles.ROWS` widened here; the kept code computes float64 rows in the kernels,
whose SASS loops did not shrink with the rows: 2,924 -> 3,003 and 3,508 -> 3,606 instructions, but the gradient's
spills went 80 -> 36 B). Usage: python rows_f64.py OUT_DIR"""
import runpy
import sys
from pathlib import Path

import torch

from deeppot.kernels import atom_tiles

atom_tiles.ROWS.add(torch.float64)
sys.argv = [sys.argv[0], sys.argv[1]]
runpy.run_path(str(Path(__file__).resolve().parents[1] / "run128" / "infer_kernels.py"), run_name="__main__")
