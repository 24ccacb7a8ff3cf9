"""Reading and checking the `.npy` arrays of one `set.*` folder (spec §1.2).

The label table `LABELS` is the one place that says which labels exist, how they are laid out per frame,
how they are stored in memory and what a missing label holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


class DataError(ValueError):
    """Bad training data; the message names the file (and the frame where useful)."""


@dataclass(frozen=True)
class LabelSpec:
    """Layout of one label.

    `per_atom`: values repeat for every atom; `width`: values per atom (or per frame), None when the width is
    free (fparam/aparam: read from the file); `fill`: the value of a missing label.
    """

    per_atom: bool
    width: int | None
    fill: float = 0.0

    def stored_shape(self, nf: int, natoms: int, width: int) -> tuple[int, ...]:
        """In-memory shape: (nf,[natoms,][width]); a fixed width of 1 is squeezed (energy, atom_ener)."""
        lead = (nf, natoms) if self.per_atom else (nf,)
        return lead if self.width == 1 else (*lead, width)

    def default(self, nf: int, natoms: int) -> np.ndarray:
        """The value of a missing label; free-width labels get width 0."""
        return np.full(self.stored_shape(nf, natoms, self.width or 0), self.fill, dtype=np.float64)


LABELS: dict[str, LabelSpec] = {
    "energy": LabelSpec(per_atom=False, width=1),  # (nf,) eV
    "force": LabelSpec(per_atom=True, width=3),  # (nf, natoms, 3) eV/Å
    "virial": LabelSpec(per_atom=False, width=9),  # (nf, 9) eV, row-major 3x3
    "atom_ener": LabelSpec(per_atom=True, width=1),  # (nf, natoms) eV
    "atom_pref": LabelSpec(per_atom=True, width=1, fill=1.0),  # (nf, natoms) force weight
    "fparam": LabelSpec(per_atom=False, width=None),  # (nf, nfparam)
    "aparam": LabelSpec(per_atom=True, width=None),  # (nf, natoms, naparam)
}


def read_npy(file: Path) -> np.ndarray:  # or an H5Path dataset (duck-typed: read_array)
    """Load a numeric `.npy` file (or its HDF5 dataset, `deeppot.data.h5path.H5Path`) as float64 (any shape)."""
    try:
        arr = file.read_array() if hasattr(file, "read_array") else np.load(file, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise DataError(f"{file}: cannot read as .npy ({err})") from err
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise DataError(f"{file}: dtype {arr.dtype} is not numeric")
    return arr.astype(np.float64, copy=False)


def split_frames(arr: np.ndarray, file: Path, per_frame: int, what: str, nf: int | None = None) -> np.ndarray:
    """Reshape to (frames, per_frame); the size must be a multiple of `per_frame` (described by `what`) and,
    when `nf` is given, hold exactly `nf` frames (the frame count of coord.npy)."""
    if arr.size % per_frame:
        raise DataError(f"{file}: {arr.size} values is not a multiple of {what} = {per_frame}")
    frames = arr.size // per_frame
    if nf is not None and frames != nf:
        raise DataError(f"{file}: {frames} frames but coord.npy has {nf}")
    return arr.reshape(frames, per_frame)


def check_finite(arr: np.ndarray, file: Path | str, frame_offset: int = 0) -> None:
    """Raise if any value of `arr` (nf, ...) is NaN or Inf, naming the first bad frame."""
    bad = ~np.isfinite(arr.reshape(arr.shape[0], -1)).all(axis=1)
    if bad.any():
        raise DataError(f"{file}: NaN or Inf in frame {int(np.argmax(bad)) + frame_offset}")


def check_box(box: np.ndarray, file: Path | str, frame_offset: int = 0) -> None:
    """Cells (nf, 3, 3) must be finite and have a volume (a zero-volume cell breaks the neighbour search)."""
    check_finite(box, file, frame_offset)
    flat = np.abs(np.linalg.det(box)) < 1e-12
    if flat.any():
        raise DataError(f"{file}: zero-volume cell in frame {int(np.argmax(flat)) + frame_offset}")


def _label_file(set_dir: Path, key: str) -> Path | None:
    """`<key>.npy`, or its `atomic_<x>.npy` alias for `atom_<x>` keys; None if neither exists."""
    candidates = [set_dir / f"{key}.npy"]
    if key.startswith("atom_"):
        candidates.append(set_dir / f"atomic_{key.removeprefix('atom_')}.npy")
    return next((f for f in candidates if f.is_file()), None)


def read_set_label(set_dir: Path, key: str, nf: int, natoms: int) -> np.ndarray | None:
    """One label of one set in its stored shape (see `LABELS`), or None if the set has no such file."""
    file = _label_file(set_dir, key)
    if file is None:
        return None
    spec = LABELS[key]
    arr = read_npy(file)
    atoms = natoms if spec.per_atom else 1
    if spec.width is None:  # free width: the frame count fixes it
        unit = nf * atoms
        if arr.size % unit:
            raise DataError(f"{file}: {arr.size} values do not split into {nf} frames x {atoms} atoms")
        width = arr.size // unit
    else:
        width = spec.width
        what = f"natoms*{width}" if spec.per_atom else str(width)
        arr = split_frames(arr, file, atoms * width, what, nf)
    check_finite(arr.reshape(nf, -1), file)
    return arr.reshape(spec.stored_shape(nf, natoms, width))
