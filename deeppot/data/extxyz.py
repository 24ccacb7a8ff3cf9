"""Extended XYZ files (read through ASE) -> `System`s, one per (number of atoms, chemical symbols, pbc).

Labels: energy eV (calculator results or `info['energy']`), forces eV/Å (calculator or `arrays['forces']`),
virial eV = -stress · volume (spec §1.2; stress from the calculator or `info['stress']`, or `info['virial']`
taken as is). A frame whose `pbc` is all False is non-periodic (box None); partial periodicity is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from deeppot.data._arrays import DataError
from deeppot.data.system import System, make_system

__all__ = ["load_extxyz"]


def _import_ase_io() -> Any:
    try:
        import ase.io
    except ImportError as err:  # ASE is an optional dependency
        raise ImportError("reading extended XYZ needs ASE: pip install deeppot[ase]") from err
    return ase.io


def _lookup(atoms: Any, key: str) -> np.ndarray | None:
    """A property from the calculator results, then `atoms.arrays`, then `atoms.info`; None if absent."""
    results = getattr(atoms.calc, "results", {}) if atoms.calc is not None else {}
    for source in (results, atoms.arrays, atoms.info):
        if key in source:
            return np.asarray(source[key], dtype=np.float64)
    return None


def _virial(atoms: Any, periodic: bool) -> np.ndarray | None:
    """(9,) eV, row-major: -stress · volume; no virial without a cell."""
    stress = _lookup(atoms, "stress")
    if stress is not None and periodic:
        if stress.size == 6:
            from ase.stress import voigt_6_to_full_3x3_stress

            stress = voigt_6_to_full_3x3_stress(stress)
        return (-stress.reshape(3, 3) * atoms.get_volume()).reshape(9)
    virial = _lookup(atoms, "virial")
    return None if virial is None else virial.reshape(9)


def _frame_arrays(atoms: Any, index: int, path: str) -> tuple[bool, dict[str, np.ndarray]]:
    """One frame -> (periodic, {coord (natoms,3), box (3,3), energy (), force (natoms,3), virial (9,)})."""
    pbc = np.asarray(atoms.pbc, dtype=bool)
    if pbc.any() and not pbc.all():
        raise DataError(f"{path}: frame {index} is periodic along some axes only (pbc={pbc.tolist()})")
    periodic = bool(pbc.all())
    found = {"coord": atoms.get_positions(), "box": np.asarray(atoms.cell.array) if periodic else None}
    found |= {"energy": _lookup(atoms, "energy"), "force": _lookup(atoms, "forces")}
    found["virial"] = _virial(atoms, periodic)
    arrays = {k: np.asarray(v, dtype=np.float64) for k, v in found.items() if v is not None}
    for key, value in arrays.items():
        if not np.isfinite(value).all():
            raise DataError(f"{path}: NaN or Inf in {key} of frame {index}")
    if periodic and abs(np.linalg.det(arrays["box"])) < 1e-12:
        raise DataError(f"{path}: zero-volume cell in frame {index}")
    return periodic, arrays


def _stack_group(frames: list[dict[str, np.ndarray]], indices: list[int], path: str) -> dict[str, np.ndarray]:
    """Stack per-frame arrays; a label must be present in every frame of the group or in none."""
    stacked = {}
    for key in ("coord", "box", "energy", "force", "virial"):
        have = [key in f for f in frames]
        if any(have) and not all(have):
            raise DataError(f"{path}: frame {indices[have.index(False)]} has no {key} but other frames do")
        if all(have):
            stacked[key] = np.stack([f[key] for f in frames])
    return stacked


def _atom_types(symbols: tuple[str, ...], type_map: Sequence[str], index: int, path: str) -> np.ndarray:
    missing = [s for s in symbols if s not in type_map]
    if missing:
        raise DataError(f"{path}: element {missing[0]!r} (frame {index}) is not in type_map {list(type_map)}")
    return np.array([list(type_map).index(s) for s in symbols], dtype=np.int64)


def load_extxyz(path: str | Path, type_map: Sequence[str], sort_atoms: bool = True) -> list[System]:
    """Read an extended XYZ file into Systems grouped by (natoms, chemical symbols, periodic).

    Groups keep the order of their first frame; frames keep file order. `System.path` is `"<path>#<k>"` for
    the k-th group. `type_map` gives the model type index of each element symbol.
    """
    ase_io = _import_ase_io()
    path = str(path)
    try:
        images = ase_io.read(path, index=":", format="extxyz")
    except FileNotFoundError as err:
        raise DataError(f"{path}: file does not exist") from err
    except Exception as err:  # ASE raises many types for malformed files; all mean the same to the caller
        raise DataError(f"{path}: cannot read as extended XYZ ({err})") from err
    groups: dict[tuple, list[int]] = {}
    parsed = [_frame_arrays(atoms, i, path) for i, atoms in enumerate(images)]
    for i, (atoms, (periodic, _)) in enumerate(zip(images, parsed, strict=True)):
        groups.setdefault((len(atoms), tuple(atoms.get_chemical_symbols()), periodic), []).append(i)
    if not groups:
        raise DataError(f"{path}: no frames")
    systems = []
    for k, ((_, symbols, _), indices) in enumerate(groups.items()):
        arrays = _stack_group([parsed[i][1] for i in indices], indices, path)
        atype = _atom_types(symbols, type_map, indices[0], path)
        labels = {key: arrays[key] for key in ("energy", "force", "virial") if key in arrays}
        box = arrays.get("box")
        systems.append(make_system(f"{path}#{k}", atype, arrays["coord"], box, labels, sort_atoms, type_map))
    return systems
