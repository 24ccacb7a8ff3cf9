"""Shared pieces of the MD tests: random water-like atoms, a small argon crystal (for the Lennard-Jones test
potential), a recorder of thermo values, and block-averaged statistical errors."""

from __future__ import annotations

import numpy as np
from ase import Atoms
from ase.build import bulk
from helpers import random_system

from deeppot.md import MDState, Thermo


def argon(repeat: int = 2, a: float = 5.3) -> Atoms:
    """fcc argon, 4 * repeat^3 atoms (32 by default, a 10.6 Å cube)."""
    return bulk("Ar", "fcc", a=a, cubic=True).repeat(repeat)


def water_like(natoms: int = 24, seed: int = 1) -> Atoms:
    """Random O/H atoms (no two closer than 1 Å) in a periodic 6 Å cube."""
    coord, atype, box = random_system(natoms=natoms, box_len=6.0, min_dist=1.0, seed=seed)
    return Atoms(["O" if t == 0 else "H" for t in atype.tolist()], positions=coord[0].numpy(), cell=box[0].numpy(),
                 pbc=True)


class Recorder:
    """Keeps the thermo values every `every` steps."""

    def __init__(self, every: int = 1) -> None:
        self.every, self.rows = every, []

    def __call__(self, state: MDState, thermo: Thermo) -> None:
        self.rows.append(thermo)

    def column(self, name: str, skip: int = 0) -> np.ndarray:
        return np.array([getattr(row, name) for row in self.rows[skip:]])


def block_error(values: np.ndarray, nblocks: int = 20) -> float:
    """Standard error of the mean from `nblocks` block averages (blocks longer than the correlation time)."""
    blocks = np.array_split(values, nblocks)
    means = np.array([b.mean() for b in blocks])
    return float(means.std(ddof=1) / np.sqrt(nblocks))
