"""`deeppot neighbor-stat`: DeePMD-kit's `dp neighbor-stat` plus the `sel` its automatic rule would pick."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from deeppot.data import load_systems
from deeppot.train.neighbor_stat import auto_sel, neighbor_stat

log = logging.getLogger(__name__)

AUTO_SEL_FACTOR = 1.1  # sel "auto" = "auto:1.1" (spec §3.3)


@dataclass(frozen=True)
class NeighborStatReport:
    type_map: list[str] | None  # names of the counted types (None when the data name none)
    min_nbor_dist: float  # Å
    max_nbor_size: np.ndarray  # (ntypes,) or (1,) with mixed_type
    sel: list[int]  # DeePMD-kit's "auto" rule applied to max_nbor_size


def run_neighbor_stat(systems: str | Sequence[str], rcut: float, type_map: Sequence[str] | None = None,
                      mixed_type: bool = False, device: str | torch.device | None = None) -> NeighborStatReport:
    """Neighbour statistics of every frame of every system under `systems` (searched recursively), logged as
    DeePMD-kit logs them. device: None picks a GPU when there is one."""
    if not rcut > 0:
        raise ValueError(f"--rcut must be positive, got {rcut}")
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    loaded = load_systems(systems, type_map, sort_atoms=False)
    names = list(type_map) if type_map else _data_type_map(loaded)
    if type_map is None:
        log.info("type_map: %s", names)
    ntypes = len(names) if names else 1 + max(int(s.atype.max()) for s in loaded)
    log.info("neighbour statistics of %d system(s), %d frames, rcut %g on %s", len(loaded),
             sum(s.nframes for s in loaded), rcut, device)
    max_count, min_dist = neighbor_stat(loaded, rcut, ntypes, device, mixed_type)
    sel = auto_sel(max_count, AUTO_SEL_FACTOR)
    log.info("min_nbor_dist: %f", min_dist)
    log.info("max_nbor_size: %s", max_count)
    log.info('suggested sel (DeePMD-kit\'s "auto" rule, 4 * ceil(int(max_nbor_size * %g) / 4)): %s',
             AUTO_SEL_FACTOR, sel)
    return NeighborStatReport(names, min_dist, max_count, sel)


def _data_type_map(systems) -> list[str] | None:
    """The data's own type names: load_systems has already checked that the type_map.raw files agree."""
    names = systems[0].type_names
    return None if names is None else list(names)
