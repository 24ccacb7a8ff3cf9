"""`deeppot convert-data`: any format dpdata reads -> DeePMD npy systems (`type.raw`, `type_map.raw`, `set.*`).

dpdata (the optional extra `deeppot[dpdata]`) does the reading; the npy writer is ours, so the output is float64
(dpdata's own writer defaults to float32), each system is checked before anything is written, and a failure leaves
no half-written folder (each system is written to a temporary folder next to it and renamed).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from deeppot.data import DataError

log = logging.getLogger(__name__)

DEFAULT_SET_SIZE = 5000  # frames per set.* folder (dpdata's default)
# dpdata data key -> DeePMD file (spec §1.2); written when present and non-empty
FRAME_ARRAYS = {"coords": "coord", "cells": "box", "energies": "energy", "forces": "force", "virials": "virial"}


def import_dpdata():
    try:
        import dpdata
    except ImportError:
        raise ImportError("convert-data reads other formats through dpdata: pip install 'deeppot[dpdata]'") from None
    return dpdata


def read_systems(input_path: str | Path, fmt: str, labeled: bool = True) -> list:
    """dpdata systems from a file or folder: several when the format holds several compositions (extxyz, a folder
    of DeePMD systems), else one. Unlabelled input is read as plain systems."""
    dpdata = import_dpdata()
    if not Path(input_path).exists():
        raise FileNotFoundError(f"{input_path}: input does not exist")
    _check_format(dpdata, fmt)
    try:  # formats that hold several systems first: reading those as one system keeps only part of them
        systems = list(dpdata.MultiSystems.from_file(str(input_path), fmt=fmt, labeled=labeled))
    except Exception:  # dpdata raises many kinds here; the single-system reader below reports the real error
        systems = []
    if not systems:
        try:
            cls = dpdata.LabeledSystem if labeled else dpdata.System
            systems = [cls(str(input_path), fmt=fmt)]
        except Exception as err:
            if labeled:
                log.debug("reading %s as labelled data failed (%s); trying without labels", input_path, err)
                return read_systems(input_path, fmt, labeled=False)
            raise DataError(f"{input_path}: dpdata cannot read it as {fmt!r} ({type(err).__name__}: {err})") from None
    return systems


def _check_format(dpdata, fmt: str) -> None:
    from dpdata.format import Format

    known = sorted(Format.get_formats())
    if fmt.lower() not in known:
        raise ValueError(f"unknown format {fmt!r}; dpdata reads: {', '.join(known)}")


def system_arrays(data: dict[str, Any], type_map: Sequence[str] | None, source: str) -> dict[str, np.ndarray]:
    """One dpdata system's data dict -> DeePMD arrays: atype (natoms,), type_map, and per-frame arrays
    (nf, -1) float64; atom types are remapped by name onto `type_map` when given."""
    names = [str(n) for n in data["atom_names"]]
    atype = np.asarray(data["atom_types"], dtype=np.int64)
    nframes = int(np.asarray(data["coords"]).shape[0])
    if nframes == 0 or atype.size == 0:
        raise DataError(f"{source}: no frames or no atoms to convert")
    if type_map is not None:
        missing = sorted({names[t] for t in atype} - set(type_map))
        if missing:
            raise DataError(f"{source}: element(s) {missing} are not in --type-map {list(type_map)}")
        atype = np.array([list(type_map).index(names[t]) for t in atype], dtype=np.int64)
        names = list(type_map)
    arrays = {"atype": atype, "type_map": np.array(names)}
    for key, name in FRAME_ARRAYS.items():
        value = np.asarray(data.get(key, []), dtype=np.float64)
        if value.size:
            arrays[name] = value.reshape(nframes, -1)
    if data.get("nopbc", False):
        arrays.pop("box", None)
    if "box" not in arrays and not data.get("nopbc", False):
        raise DataError(f"{source}: periodic frames without cells")
    return arrays


def write_npy_system(folder: Path, arrays: dict[str, np.ndarray], set_size: int, nopbc: bool) -> None:
    """DeePMD's npy layout (spec §1.1): type.raw, type_map.raw, [nopbc], set.000, set.001, ... of set_size frames."""
    np.savetxt(folder / "type.raw", arrays["atype"], fmt="%d")
    np.savetxt(folder / "type_map.raw", arrays["type_map"], fmt="%s")
    if nopbc:
        (folder / "nopbc").write_text("")
    nframes = arrays["coord"].shape[0]
    for k, start in enumerate(range(0, nframes, set_size)):
        set_dir = folder / f"set.{k:03d}"
        set_dir.mkdir()
        for name in FRAME_ARRAYS.values():
            if name in arrays:
                np.save(set_dir / f"{name}.npy", arrays[name][start:start + set_size])


def convert_data(input_path: str | Path, fmt: str, output: str | Path, type_map: Sequence[str] | None = None,
                 set_size: int = DEFAULT_SET_SIZE) -> list[Path]:
    """Convert `input_path` (dpdata format `fmt`) into DeePMD npy systems under `output`.

    One system is written to `output` itself; several (different compositions) to `output/<formula>`, dpdata's
    names. `output` must not exist or be empty. Returns the system folders written.
    """
    if set_size < 1:
        raise ValueError(f"--set-size must be >= 1, got {set_size}")
    output = Path(output)
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise FileExistsError(f"{output}: exists and is not an empty folder; choose a new output folder")
    systems = read_systems(input_path, fmt)
    converted = [(s, system_arrays(s.data, type_map, f"{input_path} ({s.formula})")) for s in systems]
    targets = [output] if len(converted) == 1 else [output / s.formula for s, _ in converted]
    output.mkdir(parents=True, exist_ok=True)
    for (system, arrays), target in zip(converted, targets, strict=True):
        _write_atomically(target, arrays, set_size, bool(system.data.get("nopbc", False)))
        nframes = arrays["coord"].shape[0]
        log.info("%s: %d frames, %d atoms, %d set(s), labels %s", target, nframes, arrays["atype"].size,
                 -(-nframes // set_size), [k for k in ("energy", "force", "virial") if k in arrays])
    return targets


def _write_atomically(target: Path, arrays: dict[str, np.ndarray], set_size: int, nopbc: bool) -> None:
    """Write into a temporary sibling folder, then rename it onto `target` (replacing an empty folder)."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        write_npy_system(tmp, arrays, set_size, nopbc)
        if target.is_dir():
            target.rmdir()  # empty (checked by the caller): os.replace cannot replace a folder
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
