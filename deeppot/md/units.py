"""Units of `deeppot.md`, stated once: Å, fs, amu, eV, K, bar (DeePMD and LAMMPS `metal` units, but fs for time).

positions Å; velocities Å/fs; masses amu (ase.data.atomic_masses); energies eV; forces eV/Å; virial eV; temperature
K; pressure bar; time fs. The constants are ASE's (CODATA 2014), so a trajectory agrees with ASE to rounding.
"""

from __future__ import annotations

from ase import units as _ase

KB = float(_ase.kB)  # Boltzmann constant, eV/K
# kinetic energy of 1 amu at 1 Å/fs, in eV: 1 / fs^2 in ASE's time unit Å sqrt(amu/eV) (103.64 eV)
MVV2E = float(1.0 / _ase.fs**2)
BAR = float(_ase.bar)  # 1 bar in eV/Å^3 (6.24e-7)
FS = float(_ase.fs)  # 1 fs in ASE's time unit: an ASE velocity (Å per ASE time) is (Å/fs) / FS

__all__ = ["BAR", "FS", "KB", "MVV2E"]
