"""DeePMD systems on disk (spec §1.1-1.2) -> in-memory `System` objects.

A system directory holds `type.raw`, optionally `type_map.raw` and `nopbc`, and one or more `set.*` folders
of `.npy` arrays whose first axis is the frame. Every set is read into memory (float64) and concatenated in
sorted set order; every bad input raises `DataError` naming the file (and the frame where that helps).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from deeppot.data._arrays import (
    LABELS,
    DataError,
    check_box,
    check_finite,
    read_npy,
    read_set_label,
    split_frames,
)
from deeppot.data.h5path import H5Path, data_path, h5_systems, is_h5_spec

__all__ = ["DataError", "System", "find_systems", "load_system", "load_systems", "make_system", "read_datafile"]

PathLike = str | Path
Paths = PathLike | Sequence[PathLike]  # one system path or a list of them
SysDir = Path | H5Path  # a system folder or an HDF5 group: the reader uses only what both offer


@dataclass(frozen=True, eq=False)  # eq=False: `==` on numpy fields would be ambiguous
class System:
    """One DeePMD system, all sets concatenated, float64.

    Shapes: `atype` (natoms,) int64 model type indices; `coord` (nf, natoms, 3) Å; `box` (nf, 3, 3) Å, cell
    row vectors, or None without periodic boundaries; `labels` energy (nf,) eV, force (nf, natoms, 3) eV/Å,
    virial (nf, 9) eV, atom_ener (nf, natoms) eV, atom_pref (nf, natoms), fparam (nf, nfparam),
    aparam (nf, natoms, naparam); `find[key]` tells whether the label was on disk (otherwise it holds its
    default); `order` (natoms,) the file index of each stored atom; `type_names` the names of the type
    indices, if known.
    """

    path: str
    atype: np.ndarray
    coord: np.ndarray
    box: np.ndarray | None
    labels: dict[str, np.ndarray]
    find: dict[str, bool]
    order: np.ndarray
    type_names: tuple[str, ...] | None = None

    @property
    def nframes(self) -> int:
        return int(self.coord.shape[0])

    @property
    def natoms(self) -> int:
        return int(self.atype.shape[0])

    @property
    def nopbc(self) -> bool:
        return self.box is None


def make_system(
    path: str,
    atype: np.ndarray,
    coord: np.ndarray,
    box: np.ndarray | None,
    labels: Mapping[str, np.ndarray],
    sort_atoms: bool = True,
    type_names: Sequence[str] | None = None,
) -> System:
    """Build a `System` from file-order arrays: fill missing labels with defaults, then sort atoms by type.

    `coord` (nf, natoms, 3); `box` (nf, 3, 3) or None; `labels` holds only the labels that exist, in the
    stored shapes of `System.labels`. Sorting is stable, so atoms of one type keep their file order.
    """
    nf, natoms = coord.shape[0], atype.shape[0]
    full, find = {}, {}
    for key, spec in LABELS.items():
        find[key] = key in labels
        full[key] = np.asarray(labels[key], dtype=np.float64) if find[key] else spec.default(nf, natoms)
    order = np.argsort(atype, kind="stable") if sort_atoms else np.arange(natoms)
    for key, spec in LABELS.items():
        if spec.per_atom:
            full[key] = np.ascontiguousarray(full[key][:, order])
    return System(
        path=path,
        atype=np.ascontiguousarray(atype[order], dtype=np.int64),
        coord=np.ascontiguousarray(coord[:, order], dtype=np.float64),
        box=None if box is None else np.ascontiguousarray(box, dtype=np.float64),
        labels=full,
        find=find,
        order=order.astype(np.int64),
        type_names=None if type_names is None else tuple(type_names),
    )


def _read_tokens(file: SysDir) -> list[str]:
    try:
        return file.read_text().split()
    except OSError as err:
        raise DataError(f"{file}: cannot read ({err})") from err


def read_type_raw(sys_dir: SysDir) -> np.ndarray:
    """`type.raw` -> (natoms,) int64 file type indices (≥ 0)."""
    file = sys_dir / "type.raw"
    if not file.is_file():
        raise DataError(f"{file}: missing type.raw (not a DeePMD system)")
    tokens = _read_tokens(file)
    try:
        atype = np.array([int(t) for t in tokens], dtype=np.int64)
    except ValueError as err:
        raise DataError(f"{file}: atom types must be integers ({err})") from err
    if atype.size == 0:
        raise DataError(f"{file}: no atoms")
    if (atype < 0).any():
        raise DataError(f"{file}: negative atom type {atype.min()} at atom {int(np.argmax(atype < 0))}")
    return atype


def read_type_map_raw(sys_dir: SysDir) -> list[str] | None:
    """`type_map.raw` -> type names, or None if the file does not exist."""
    file = sys_dir / "type_map.raw"
    return _read_tokens(file) if file.is_file() else None


def remap_types(
    atype: np.ndarray, names: Sequence[str] | None, type_map: Sequence[str] | None, sys_dir: SysDir
) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """Map file type indices onto the model `type_map` by name (spec §1.1); return (atype, type names)."""
    if names is not None and atype.max() >= len(names):
        names_file = sys_dir / "type_map.raw"
        raise DataError(f"{sys_dir / 'type.raw'}: type {atype.max()} but {names_file} names {len(names)} types")
    if type_map is None:
        return atype, None if names is None else tuple(names)
    if names is None:  # integers are used as they are
        if atype.max() >= len(type_map):
            raise DataError(f"{sys_dir / 'type.raw'}: type {atype.max()} but type_map has {len(type_map)}")
        return atype, tuple(type_map)
    missing = [n for n in names if n not in type_map]
    if missing:
        raise DataError(f"{sys_dir / 'type_map.raw'}: type {missing[0]!r} not in type_map {list(type_map)}")
    lookup = np.array([list(type_map).index(n) for n in names], dtype=np.int64)
    return lookup[atype], tuple(type_map)


def _read_set(set_dir: SysDir, natoms: int, nopbc: bool) -> tuple[np.ndarray, np.ndarray | None, dict]:
    """One `set.*` folder -> coord (nf, natoms, 3), box (nf, 3, 3) or None, labels present (stored shapes)."""
    coord_file = set_dir / "coord.npy"
    if not coord_file.is_file():
        raise DataError(f"{coord_file}: missing coord.npy")
    coord = split_frames(read_npy(coord_file), coord_file, natoms * 3, "natoms*3")
    nf = coord.shape[0]
    if nf == 0:
        raise DataError(f"{coord_file}: no frames")
    check_finite(coord, coord_file)
    box = None
    if not nopbc:
        box_file = set_dir / "box.npy"
        if not box_file.is_file():
            raise DataError(f"{box_file}: missing box.npy (add a 'nopbc' file for a non-periodic system)")
        box = split_frames(read_npy(box_file), box_file, 9, "9", nf).reshape(nf, 3, 3)
        check_box(box, box_file)
    labels = {}
    for key in LABELS:
        value = read_set_label(set_dir, key, nf, natoms)
        if value is not None:
            labels[key] = value
    return coord.reshape(nf, natoms, 3), box, labels


def _concat_labels(per_set: list[dict], set_dirs: list[SysDir]) -> dict[str, np.ndarray]:
    """Concatenate labels over sets; a label must be in every set or in none (find is per system)."""
    labels = {}
    for key in LABELS:
        have = [key in lab for lab in per_set]
        if any(have) and not all(have):
            absent = set_dirs[have.index(False)]
            raise DataError(f"{absent}: {key}.npy is missing here but present in another set of this system")
        if all(have):
            parts = [lab[key] for lab in per_set]
            if len({p.shape[1:] for p in parts}) > 1:
                raise DataError(f"{set_dirs[0].parent}: {key}.npy has different widths in different sets")
            labels[key] = np.concatenate(parts)
    return labels


def load_system(path: PathLike, type_map: Sequence[str] | None = None, sort_atoms: bool = True) -> System:
    """Read one DeePMD system directory (spec §1.1-1.2) into memory.

    `type_map`: the model's type names; the system's `type_map.raw` names are remapped onto it by name.
    `sort_atoms`: stably sort atoms by type (training does, `dp test` does not); `System.order` records the
    file index of each stored atom.
    """
    sys_dir = data_path(path)  # a folder, or a group of an HDF5 file (`file.h5#/group`)
    atype = read_type_raw(sys_dir)
    atype, type_names = remap_types(atype, read_type_map_raw(sys_dir), type_map, sys_dir)
    set_dirs = sorted(p for p in sys_dir.glob("set.*") if p.is_dir())
    if not set_dirs:
        raise DataError(f"{sys_dir}: no set.* directory")
    if any((d / "real_atom_types.npy").exists() for d in set_dirs):
        raise DataError(f"{sys_dir}: mixed_type systems (real_atom_types.npy) are not supported")
    nopbc = (sys_dir / "nopbc").exists()
    sets = [_read_set(d, atype.size, nopbc) for d in set_dirs]
    coord = np.concatenate([s[0] for s in sets])
    box = None if nopbc else np.concatenate([s[1] for s in sets])
    labels = _concat_labels([s[2] for s in sets], set_dirs)
    return make_system(str(sys_dir), atype, coord, box, labels, sort_atoms, type_names)


def _systems_under(root: Path, rglob_patterns: Sequence[str] | None) -> list[Path]:
    if rglob_patterns is None:
        found = [d.parent for d in root.rglob("type.raw") if d.is_file()]
    else:  # DeePMD's rglob_sys_str: directories matching a pattern that hold type.raw
        found = [d for p in rglob_patterns for d in root.rglob(p) if (d / "type.raw").is_file()]
        if (root / "type.raw").is_file() and any(root.match(p) for p in rglob_patterns):
            found.append(root)
    return sorted(set(found), key=str)


def find_systems(paths: Paths, rglob_patterns: Sequence[str] | None = None) -> list[str]:
    """Every directory holding `type.raw` under each path (the path itself included), recursively.

    HDF5 files (spec §1.1): `file.h5` gives every group holding a `type.raw` dataset, `file.h5#/group` that group
    and the groups below it; the systems are named `file.h5#/group` (what `load_system` reads).
    Systems found under one path are sorted by name; paths keep the order given (sys_probs index into the
    result); duplicates are dropped. `rglob_patterns` restricts the search to directories matching a pattern.
    """
    roots = [paths] if isinstance(paths, str | Path) else list(paths)
    result: list[str] = []
    for root in roots:
        if is_h5_spec(root):  # `file.h5` (all its systems) or `file.h5#/group`
            result += [d for d in h5_systems(root) if d not in result]
            continue
        root = Path(root)
        if not root.exists():
            raise DataError(f"{root}: system path does not exist")
        found = _systems_under(root, rglob_patterns)
        if not found:
            raise DataError(f"{root}: no DeePMD system (no directory with type.raw) found")
        result += [str(d) for d in found if str(d) not in result]
    return result


def read_datafile(datafile: str | Path) -> list[str]:
    """`-f/--datafile` of `dp test` and `dp change-bias`: one system path per line (blank lines skipped), each
    read as it is (a folder or `file.h5#/group`)."""
    try:
        lines = Path(datafile).read_text().splitlines()
    except OSError as err:
        raise DataError(f"{datafile}: cannot read the list of systems ({err})") from None
    systems = [line.strip() for line in lines if line.strip()]
    if not systems:
        raise DataError(f"{datafile}: lists no system")
    return systems


def _common_type_map(sys_dirs: Sequence[str]) -> list[str] | None:
    """Without a model type_map, data type maps must be prefix-compatible; the longest is used (spec §1.1)."""
    longest: list[str] | None = None
    for d in sys_dirs:
        names = read_type_map_raw(data_path(d))
        if names is None:
            continue
        short, long = sorted([names, longest or []], key=len)
        if long[: len(short)] != short:
            raise DataError(f"{Path(d) / 'type_map.raw'}: type map {names} is inconsistent with {longest}")
        longest = long
    return longest


def load_systems(
    paths: Paths,
    type_map: Sequence[str] | None = None,
    sort_atoms: bool = True,
    rglob_patterns: Sequence[str] | None = None,
) -> list[System]:
    """`find_systems(paths, rglob_patterns)` then `load_system` for each, with one type map for all systems."""
    sys_dirs = find_systems(paths, rglob_patterns)
    if type_map is None:
        type_map = _common_type_map(sys_dirs)
    return [load_system(d, type_map, sort_atoms) for d in sys_dirs]
