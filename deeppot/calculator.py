"""`DP`: an ASE calculator on deeppot's inference engine, a drop-in for `deepmd.calculator.DP`.

    from deeppot.calculator import DP
    atoms.calc = DP(model="model.dp")             # any model file deeppot reads, a `DeepPot` or an `EnergyModel`
    atoms.get_potential_energy(), atoms.get_forces(), atoms.get_stress()

Needs ASE (`pip install deeppot[ase]`); `import deeppot` does not import this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from ase import Atoms
from ase.calculators.calculator import Calculator, PropertyNotImplementedError, all_changes
from ase.stress import full_3x3_to_voigt_6_stress

from deeppot.infer import DeepPot
from deeppot.model import EnergyModel

ATOMIC_PROPERTIES = frozenset({"energies", "stresses"})  # need DeepPot.eval(atomic=True)
CELL_PROPERTIES = frozenset({"stress", "stresses"})  # need a periodic cell


class DP(Calculator):
    """ASE calculator of a Deep Potential, like `deepmd.calculator.DP`.

    model: a model file (.dp, .yaml, .pt), a `deeppot.infer.DeepPot` (used as it is) or an `EnergyModel`.
    type_dict: chemical symbol -> model type index; None takes the model's type map.
    device: where a DeepPot built here runs ("cpu", "cuda", ...; None: a GPU when there is one).
    Other keywords go to `ase.calculators.calculator.Calculator`.

    Results: energy, free_energy (eV), forces (natoms, 3) eV/Å, virial (3, 3) eV, stress (6,) eV/Å^3 in ASE's Voigt
    order (xx, yy, zz, yz, xz, xy) with stress = -sym(virial) / volume; energies (natoms,) eV and stresses
    (natoms, 6) eV/Å^3 (-sym(atomic virial) / volume, summing to stress), computed only when asked for.
    Boundaries: pbc all False is evaluated without a cell (stress then raises PropertyNotImplementedError); any
    periodic direction passes the full cell, as DeePMD-kit does, so a slab (pbc=[True, True, False]) needs a cell
    of non-zero volume and sees its images along the non-periodic axis unless the vacuum there exceeds rcut.
    """

    name = "DP"
    implemented_properties: ClassVar[list[str]] = [
        "energy", "free_energy", "forces", "virial", "stress", "energies", "stresses"]

    def __init__(self, model: str | Path | DeepPot | EnergyModel, label: str = "DP",
                 type_dict: dict[str, int] | None = None, device: str | torch.device | None = None,
                 **kwargs: Any) -> None:
        super().__init__(label=label, **kwargs)
        if isinstance(model, DeepPot):
            if device is not None:
                raise ValueError("device applies to a model DP loads itself, not to a DeepPot passed in")
            self.dp = model
        else:
            self.dp = DeepPot(model, device=device)
        ntypes = self.dp.get_ntypes()
        self.type_dict = dict(type_dict) if type_dict else {name: i for i, name in enumerate(self.dp.get_type_map())}
        bad = {name: i for name, i in self.type_dict.items() if not 0 <= i < ntypes}
        if bad:
            raise ValueError(f"type_dict entries {bad} are outside the model's {ntypes} types "
                             f"(type map {self.dp.get_type_map()})")

    def atom_types(self, atoms: Atoms) -> np.ndarray:
        """(natoms,) int64 model type of each atom, from its chemical symbol."""
        symbols = atoms.get_chemical_symbols()
        unknown = sorted(set(symbols) - self.type_dict.keys())
        if unknown:
            raise ValueError(f"element(s) {', '.join(unknown)} not in the model's type map "
                             f"{self.dp.get_type_map()} (symbol -> type: {self.type_dict})")
        return np.array([self.type_dict[s] for s in symbols], dtype=np.int64)

    def calculate(self, atoms: Atoms | None = None, properties: Sequence[str] = ("energy", "forces"),
                  system_changes: Sequence[str] = all_changes) -> None:
        """Evaluate `atoms` (or the last atoms) and fill `self.results` with every property it can give;
        the per-atom ones only when `properties` asks for energies or stresses."""
        super().calculate(atoms, properties, system_changes)
        atoms = self.atoms
        periodic = bool(atoms.pbc.any())
        if not periodic and CELL_PROPERTIES.intersection(properties):
            raise PropertyNotImplementedError("stress needs periodic boundaries (atoms.pbc is all False)")
        atomic = bool(ATOMIC_PROPERTIES.intersection(properties))
        cell = atoms.cell.array[None] if periodic else None
        out = self.dp.eval(atoms.positions[None], cell, self.atom_types(atoms), atomic=atomic)
        self.results = results_of(out, atoms.get_volume() if periodic else None)


def results_of(out: tuple[np.ndarray, ...], volume: float | None) -> dict[str, Any]:
    """ASE results from one frame of `DeepPot.eval` (energy, force, virial [, atom energy, atom virial]).

    volume: the cell volume in Å^3, or None without periodic boundaries (then no stresses).
    """
    energy, force, virial = out[0][0, 0], out[1][0], out[2][0].reshape(3, 3)
    results: dict[str, Any] = {"energy": float(energy), "free_energy": float(energy), "forces": force,
                               "virial": virial}
    if volume is not None:
        results["stress"] = full_3x3_to_voigt_6_stress(-virial / volume)
    if len(out) > 3:
        results["energies"] = out[3][0, :, 0]
        if volume is not None:
            results["stresses"] = full_3x3_to_voigt_6_stress(-out[4][0].reshape(-1, 3, 3) / volume)
    return results


__all__ = ["DP"]
