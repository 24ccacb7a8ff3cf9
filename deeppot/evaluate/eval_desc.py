"""`dp eval-desc`: the descriptor of every atom of each system, one file OUTPUT/<system name>.npy a system of shape
(nframes, natoms, M1*M2) in the file's atom order, as DeePMD-kit 3.2 writes them (its `eval_descriptor`'s layout).

Systems with the same folder name would overwrite each other's file; they are refused before anything is computed.
Each file is written whole or not at all (a temporary file renamed into place).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from deeppot.data import System, load_system
from deeppot.infer import DeepPot
from deeppot.io.dp_file import atomic_write

__all__ = ["eval_desc", "output_names", "read_frames", "system_name"]

log = logging.getLogger(__name__)


def system_name(system: str) -> str:
    """A system's name in what eval-desc and embed write: its folder's (or HDF5 group's) last component."""
    return os.path.basename(str(system).rstrip("/"))


def output_names(systems: Sequence[str]) -> list[str]:
    """Each system's file name: its `system_name`, as DeePMD-kit names them."""
    names = [system_name(s) for s in systems]
    seen: dict[str, str] = {}
    for system, name in zip(systems, names, strict=True):
        if name in seen:
            raise ValueError(f"systems {seen[name]} and {system} would both be written to {name}.npy; "
                             f"evaluate them in two runs with different -o folders")
        seen[name] = system
    return [f"{name}.npy" for name in names]


def read_frames(dp: DeepPot, path: str) -> tuple[System, np.ndarray | None]:
    """A system in file atom order with the model's type indices, and its cells as `DeepPot`'s queries take them
    ((nf, 9), or None without periodic boundaries)."""
    system = load_system(path, type_map=dp.get_type_map(), sort_atoms=False)
    return system, None if system.box is None else system.box.reshape(system.nframes, 9)


def eval_desc(model: str | Path | DeepPot, systems: Sequence[str], output: str | Path = "desc",
              dtype: str = "native", device: str | None = None) -> list[Path]:
    """Write the descriptors of each system to `output`/<name>.npy and return the paths written.

    dtype: "native" (the model's precision), "fp32" or "fp64"; device: None picks a GPU when there is one.
    """
    names = output_names(systems)
    dp = model if isinstance(model, DeepPot) else DeepPot(model, device, graph=False)
    folder = Path(output)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for path, name in zip(systems, names, strict=True):
        log.info("evaluating descriptors of %s", path)
        system, cells = read_frames(dp, path)
        desc = dp.eval_descriptor(system.coord, cells, system.atype, dtype=dtype)
        target = folder / name
        atomic_write(target, lambda tmp, desc=desc: _save_npy(tmp, desc))
        log.info("descriptors of shape %s saved to %s", desc.shape, target)
        written.append(target)
    return written


def _save_npy(path: str, array: np.ndarray) -> None:
    with open(path, "wb") as fout:  # a file object: np.save would append .npy to the temporary name
        np.save(fout, array)
