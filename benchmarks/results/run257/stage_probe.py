"""Run 257: the inference pair stage's memory-bound steps folded together, timed in one process on trained models
(run 250's `variant_probe.py` runner): `reach.KERNEL` (the reach in one Triton pass), `atom_tiles.FUSED_TAIL` (the
T kernel adds the tail itself), `descriptor.D_IN_T_KERNEL` (the T kernel also writes D for the fitting nets) and
`descriptor.SCATTER_IN_STAGE` (the forces and virials from the gradient kernel's dE/dR_ij in one kernel, call 2),
`descriptor.D_IN_T_KERNEL_COMPRESSED` (the compressed T kernel adds the tail and writes D, call 3),
`descriptor.T_BAR_IN_GRAD` (the gradient kernel makes dE/dT from dE/dD itself, call 5).

Usage (GPU, repository root): python stage_probe.py water=.mid/water/model.dp ... --natoms 98304 --rounds 2
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import atom_tiles, descriptor, reach

# (reach kernel, tail in T, D in T, scatter in the stage, D in the compressed T kernel, dE/dT in the gradient
# kernel); the tail's flag covers the compressed T kernel from call 3 on, so "call2" is call 2's tree for compressed
# models
VARIANTS = {"base": (False, False, False, False, False, False), "reach": (True, False, False, False, False, False),
            "tail": (True, True, False, False, False, False), "tail_d": (True, True, True, False, False, False),
            "call2": (True, False, True, True, False, False), "ctail": (True, True, True, True, False, False),
            "all": (True, True, True, True, True, False), "t_bar": (True, True, True, True, True, True)}


def set_flags(name):
    (reach.KERNEL, atom_tiles.FUSED_TAIL, descriptor.D_IN_T_KERNEL, descriptor.SCATTER_IN_STAGE,
     descriptor.D_IN_T_KERNEL_COMPRESSED, descriptor.T_BAR_IN_GRAD) = VARIANTS[name]


if __name__ == "__main__":
    main(VARIANTS, set_flags)
