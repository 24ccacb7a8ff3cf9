"""Run 267: whole prebuilt-list calls of the f16x3 atom tiles, T plain ("base") or with its last layer and
contraction transposed (`atom_tiles.TRANSPOSED_T`, "transposed"), and the shared rows read one chunk ahead
(`atom_tiles.READ_AHEAD`) by the transposed T ("ahead_t") or by both kernels ("ahead_both"), the gradient kernel's
programs walking their tiles net by net (`atom_tiles.GRAD_PER_NET`, "per_net"), and the transposed T reading ahead
with that gradient ("all"); run 250's `variant_probe.py` runner.
Usage (GPU, repository root): python ahead_ab.py water=.mid/water/model.dp ... --rounds 2
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import atom_tiles

VARIANTS = {"base": (False, (), 0), "transposed": (True, (), 0), "ahead_t": (True, ("t",), 0),
            "ahead_both": (True, ("t", "grad"), 0), "per_net": (False, (), 2), "all": (True, ("t",), 2)}


def set_variant(name):
    atom_tiles.TRANSPOSED_T, ahead, atom_tiles.GRAD_PER_NET = VARIANTS[name]
    atom_tiles.READ_AHEAD = frozenset(ahead)


if __name__ == "__main__":
    main(tuple(VARIANTS), set_variant, keep=("tiled", "_persistent_kernel", "_stack_kernel", "gemm", "xmma"))
