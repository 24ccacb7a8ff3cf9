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
from deeppot.infer.deep_pot import standard_input
from deeppot.md.potential import DeepPotential
from deeppot.md.step_graph import ComputeGraph
from deeppot.model import EnergyModel

KEPT_SKIN = 2.0  # Å, as `deeppot md --skin`
ATOMIC_PROPERTIES = frozenset({"energies", "stresses"})  # need DeepPot.eval(atomic=True)
CELL_PROPERTIES = frozenset({"stress", "stresses"})  # need a periodic cell


class DP(Calculator):
    """ASE calculator of a Deep Potential, like `deepmd.calculator.DP`.

    model: a model file (.dp, .yaml, .pt), a `deeppot.infer.DeepPot` (used as it is) or an `EnergyModel`.
    type_dict: chemical symbol -> model type index; None takes the model's type map.
    device: where a DeepPot built here runs ("cpu", "cuda", ...; None: a GPU when there is one).
    skin: Å. A calculator called again and again on the same atoms (ASE's MD, relaxations) keeps a Verlet-skin
    neighbour list between calls (`deeppot.md.DeepPotential`): built with rcut + skin, rebuilt only when an atom
    moved more than skin / 2 (or the cell strained enough), and on a GPU each call replays the evaluation from a
    CUDA graph (up to 20,000 atoms). None builds a fresh list in every call, as DeePMD-kit's calculator does;
    "auto" (the default) keeps one of `KEPT_SKIN` Å on a GPU and none on a CPU. The kept list holds DeePMD-kit's
    neighbour order, so both give the same results to rounding; per-atom energies and stresses always take the
    fresh-list path.
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
                 skin: float | str | None = "auto", **kwargs: Any) -> None:
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
        if skin == "auto":
            skin = KEPT_SKIN if self.dp.evaluator.device.type == "cuda" else None
        if skin is not None and not (isinstance(skin, int | float) and skin >= 0):
            raise ValueError(f"skin must be a distance >= 0 in Å, None or 'auto', got {skin!r}")
        self.skin = skin
        self.potential: DeepPotential | None = None  # the kept list's, for the atoms of the last call
        self.potential_key: tuple[bytes, bool] | None = None  # (their types, periodic)
        self.graph: ComputeGraph | None = None  # its compute between builds, on a GPU

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
        if atomic or self.skin is None:
            out = self.dp.eval(atoms.positions[None], cell, self.atom_types(atoms), atomic=atomic)
        else:
            out = self.kept_list_eval(atoms.positions, cell, self.atom_types(atoms))
        self.results = results_of(out, atoms.get_volume() if periodic else None)

    def kept_list_eval(self, positions: np.ndarray, cell: np.ndarray | None,
                       atype: np.ndarray) -> tuple[np.ndarray, ...]:
        """Energy (1, 1), force (1, natoms, 3) and virial (1, 9) of one frame, as `DeepPot.eval` gives them, on
        the kept neighbour list: rebuilt when the atoms moved too far, started anew when their types or
        periodicity change. On a GPU a call between builds is one replay of a `ComputeGraph` and one read."""
        coord, _, box = standard_input(positions[None], cell, atype, self.dp.get_ntypes())  # the same checks
        pot = self.kept_potential(atype, box is not None)
        pos = torch.from_numpy(coord[0]).to(pot.device)
        box = None if box is None else torch.from_numpy(box[0]).to(pot.device)
        if self.graph is not None and self.graph.valid(pot):
            packed = self.graph(pos, box).cpu().numpy()
            if packed[0] <= 1:  # no atom moved far enough to bring in a pair from beyond the list
                n = len(atype)
                return packed[1].reshape(1, 1), packed[2:2 + 3 * n].reshape(1, n, 3), packed[2 + 3 * n:].reshape(1, 9)
        energy, force, virial = pot.compute(pos, box, rebuild=bool(pot.skin_used(pos, box) > 1))
        if pot.step_graphs and (self.graph is None or not self.graph.valid(pot)):
            self.graph = ComputeGraph(pot, pos, box)
        return energy.reshape(1, 1).cpu().numpy(), force[None].cpu().numpy(), virial.reshape(1, 9).cpu().numpy()

    def kept_potential(self, atype: np.ndarray, periodic: bool) -> DeepPotential:
        """MD's potential (skin list, CUDA graphs) for these types, the last one while they and periodicity hold."""
        key = (atype.tobytes(), periodic)
        if self.potential is None or self.potential_key != key:
            self.potential = DeepPotential([self.dp.model], torch.from_numpy(atype), self.skin,
                                           self.dp.evaluator.device, sort_neighbors=True, tf32=self.dp.evaluator.tf32)
            self.potential_key, self.graph = key, None
        return self.potential


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
