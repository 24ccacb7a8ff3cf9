"""DeePMD systems stored in HDF5 (spec §1.1): the npy layout as groups and datasets, addressed `file.h5#/group`.

A system group holds the datasets `type.raw` (ints), `type_map.raw` (strings, optional), `nopbc` (optional) and
groups `set.*` with datasets `coord.npy`, `box.npy`, `energy.npy`, ... (DeePMD-kit's `DPH5Path`, dpdata's
`deepmd/hdf5`). `H5Path` offers the few `pathlib.Path` operations the system reader uses, so one reader serves
folders and HDF5 files alike. Every call opens the file for the time of one read: no handle is left open.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import numpy as np

from deeppot.data._arrays import DataError

H5_SUFFIXES = (".h5", ".hdf5")


def is_h5_spec(path: str | Path) -> bool:
    """Whether a system path names an HDF5 file (`x.h5`, `x.hdf5`, optionally followed by `#/group`)."""
    return Path(str(path).split("#", 1)[0]).suffix.lower() in H5_SUFFIXES


class H5Path:
    """A group or dataset inside an HDF5 file: `H5Path("data.h5", "/water/set.000")`, printed `data.h5#/water/...`."""

    def __init__(self, file: str | Path, name: str = "/") -> None:
        self.file = str(file)
        self.name = "/" + name.strip("/")

    @classmethod
    def parse(cls, spec: str | Path) -> H5Path:
        """`file.h5` or `file.h5#/group/...` -> H5Path; the file must exist."""
        file, _, name = str(spec).partition("#")
        if not Path(file).is_file():
            raise DataError(f"{file}: HDF5 file does not exist")
        return cls(file, name or "/")

    def __truediv__(self, key: str) -> H5Path:
        return H5Path(self.file, f"{self.name.rstrip('/')}/{key}")

    def __str__(self) -> str:
        return f"{self.file}#{self.name}"

    def __repr__(self) -> str:
        return f"H5Path({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, H5Path) and (self.file, self.name) == (other.file, other.name)

    def __hash__(self) -> int:
        return hash((self.file, self.name))

    def __lt__(self, other: H5Path) -> bool:
        return (self.file, self.name) < (other.file, other.name)

    @property
    def parent(self) -> H5Path:
        return H5Path(self.file, self.name.rsplit("/", 1)[0] or "/")

    def _kind(self) -> str | None:
        """"group", "dataset" or None (absent)."""
        import h5py

        with _open(self.file) as f:
            node = f.get(self.name)
            if node is None:
                return None
            return "group" if isinstance(node, h5py.Group) else "dataset"

    def exists(self) -> bool:
        return self._kind() is not None

    def is_file(self) -> bool:
        return self._kind() == "dataset"

    def is_dir(self) -> bool:
        return self._kind() == "group"

    def glob(self, pattern: str) -> list[H5Path]:
        """Direct children whose name matches `pattern` (fnmatch)."""
        with _open(self.file) as f:
            group = f.get(self.name)
            names = list(group.keys()) if group is not None and hasattr(group, "keys") else []
        return [self / n for n in sorted(names) if fnmatch.fnmatch(n, pattern)]

    def systems(self) -> list[H5Path]:
        """This group and every group below it that holds a `type.raw` dataset, sorted by name."""
        import h5py

        found: list[str] = []
        with _open(self.file) as f:
            root = f.get(self.name)
            if not isinstance(root, h5py.Group):
                raise DataError(f"{self}: not an HDF5 group")
            if isinstance(root.get("type.raw"), h5py.Dataset):
                found.append(self.name)
            root.visititems(lambda name, node: found.append(f"{self.name.rstrip('/')}/{name}")
                            if isinstance(node, h5py.Group) and isinstance(node.get("type.raw"), h5py.Dataset)
                            else None)
        return [H5Path(self.file, n) for n in sorted(found)]

    def read_array(self) -> np.ndarray:
        """The dataset's values (strings decoded to str)."""
        with _open(self.file) as f:
            node = f.get(self.name)
            if node is None or not hasattr(node, "shape"):
                raise DataError(f"{self}: no such dataset")
            arr = np.asarray(node[()])
        return arr.astype(str) if arr.dtype.kind in "SO" else arr

    def read_text(self) -> str:
        """A `.raw` dataset as the whitespace-separated text its file would hold."""
        return " ".join(str(v) for v in np.atleast_1d(self.read_array()).ravel())


def _open(file: str):
    import h5py

    try:
        return h5py.File(file, "r")
    except OSError as err:
        raise DataError(f"{file}: HDF5 file cannot be read ({err})") from None


def h5_systems(spec: str | Path) -> list[str]:
    """The systems of `file.h5` (every group holding type.raw) or `file.h5#/group` (that group and those below)."""
    root = H5Path.parse(spec)
    if not root.exists():
        raise DataError(f"{root}: no such group in the HDF5 file")
    found = root.systems()
    if not found:
        raise DataError(f"{root}: no DeePMD system (no group with a type.raw dataset) found")
    return [str(p) for p in found]


def data_path(path: str | Path) -> Path | H5Path:
    """A system location as the reader walks it: an `H5Path` for HDF5 specs, a `Path` otherwise."""
    return H5Path.parse(path) if is_h5_spec(path) else Path(path)
