"""Shared pieces of the MD tests: a small argon crystal with the Lennard-Jones test potential, a recorder of
thermo values, and block-averaged statistical errors."""

from __future__ import annotations

import numpy as np
from ase import Atoms
from ase.build import bulk

from deeppot.md import MDState, Thermo


def argon(repeat: int = 2, a: float = 5.3) -> Atoms:
    """fcc argon, 4 * repeat^3 atoms (32 by default, a 10.6 Å cube)."""
    return bulk("Ar", "fcc", a=a, cubic=True).repeat(repeat)


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
