"""`dp embed` (DeePMD-kit 3.2): a model's embeddings of each system in one HDF5 file, a group a system.

Each group (the system folder's name; a repeated name gets `_1`, `_2`, ...) holds `descriptor` (nframes, natoms,
M1*M2), `atomic_feature` (nframes, natoms, neuron[-1]: the last hidden fitting layer), `structural_feature`
(nframes, neuron[-1]: its sum over the atoms) and `atom_types` (nframes, natoms) int32, gzip-compressed with
shuffle, with the attributes `nframes` and `system`; the file's attribute `type_map` holds the model's type map.
The file is written whole or not at all (a temporary file renamed into place).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from deeppot.evaluate.eval_desc import read_frames, system_name
from deeppot.infer import DeepPot
from deeppot.io.dp_file import atomic_write

__all__ = ["embed", "group_names"]

log = logging.getLogger(__name__)

COMPRESSION = {"compression": "gzip", "compression_opts": 9, "shuffle": True}  # DeePMD-kit's choice


def group_names(systems: Sequence[str]) -> list[str]:
    """Each system's group: its folder's last component, `_1`, `_2`, ... added where a name repeats."""
    used: set[str] = set()
    names = []
    for system in systems:
        base = system_name(system) or "system"
        name, index = base, 1
        while name in used:
            name, index = f"{base}_{index}", index + 1
        used.add(name)
        names.append(name)
    return names


def embed(model: str | Path | DeepPot, systems: Sequence[str], output: str | Path = "embedding.hdf5",
          dtype: str = "fp32", device: str | None = None) -> Path:
    """Write the embeddings of each system to the HDF5 file `output` and return its path."""
    import h5py

    dp = model if isinstance(model, DeepPot) else DeepPot(model, device, graph=False)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp: str) -> None:
        with h5py.File(tmp, "w") as h5:
            h5.attrs["type_map"] = np.array(dp.get_type_map(), dtype=h5py.string_dtype())
            for path, name in zip(systems, group_names(systems), strict=True):
                _write_group(h5.create_group(name), dp, path, dtype)

    atomic_write(output, write)
    log.info("embeddings of %d system(s) saved to %s", len(systems), output)
    return output


def _write_group(group, dp: DeepPot, path: str, dtype: str) -> None:
    log.info("evaluating the embeddings of %s", path)
    system, cells = read_frames(dp, path)
    descriptor, atomic, structural = dp.eval_embedding(system.coord, cells, system.atype, dtype=dtype)
    for key, values in (("descriptor", descriptor), ("atomic_feature", atomic), ("structural_feature", structural),
                        ("atom_types", np.tile(system.atype.astype(np.int32), (system.nframes, 1)))):
        group.create_dataset(key, data=values, **COMPRESSION)
    group.attrs["nframes"] = system.nframes
    group.attrs["system"] = str(path)
    log.info("group %s: descriptor %s, atomic_feature %s, structural_feature %s", group.name.lstrip("/"),
             descriptor.shape, atomic.shape, structural.shape)
