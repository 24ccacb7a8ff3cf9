"""Neighbour statistics over the training data: max neighbours per type, min distance, automatic sel (§3.3)."""

from __future__ import annotations

import logging
import math

import numpy as np
import torch

from deeppot.data import System
from deeppot.nlist.stat import frame_neighbor_stat

log = logging.getLogger(__name__)

CHUNK_PAIRS = 2e7  # distances per chunk of frames: bounds memory
OVERLAP = 1e-6  # Å: closer atoms are the same atom twice (DeePMD-kit raises too)


def system_neighbor_stat(system: System, rcut: float, ntypes: int, device: torch.device | str = "cpu",
                         mixed_type: bool = False) -> tuple[np.ndarray, float]:
    """Max count of type-t neighbours within rcut over all atoms and frames (ntypes,) ((1,) with mixed_type), and
    the min distance. Two atoms at the same place raise a ValueError naming the system and the frame."""
    max_count = np.zeros(1 if mixed_type else ntypes, dtype=np.int64)
    min_dist = math.inf
    atype = torch.as_tensor(system.atype, device=device)
    chunk = max(1, int(CHUNK_PAIRS // (system.natoms * system.natoms * 27)))
    for start in range(0, system.nframes, chunk):
        coord = torch.as_tensor(system.coord[start:start + chunk], device=device)
        box = None if system.box is None else torch.as_tensor(system.box[start:start + chunk], device=device)
        counts, dists = frame_neighbor_stat(coord, atype[None].expand(coord.shape[0], -1), box, rcut, ntypes,
                                            mixed_type)
        dists = dists.cpu().numpy()
        if (dists < OVERLAP).any():
            frame = start + int(np.argmax(dists < OVERLAP))
            raise ValueError(f"{system.path}: two atoms overlap in frame {frame} (distance {dists.min():.3g} Å); "
                             "remove the duplicated atoms")
        max_count = np.maximum(max_count, counts.amax(dim=0).cpu().numpy())
        min_dist = min(min_dist, float(dists.min()))
    if math.isinf(min_dist):
        log.warning("%s: atoms with no neighbours within rcut = %g; make sure this is what you expect",
                    system.path, rcut)
    return max_count, min_dist


def neighbor_stat(systems: list[System], rcut: float, ntypes: int, device: torch.device | str = "cpu",
                  mixed_type: bool = False) -> tuple[np.ndarray, float]:
    """`system_neighbor_stat` over all systems: max counts (ntypes,) or (1,), min distance."""
    max_count = np.zeros(1 if mixed_type else ntypes, dtype=np.int64)
    min_dist = math.inf
    for system in systems:
        counts, dist = system_neighbor_stat(system, rcut, ntypes, device, mixed_type)
        max_count = np.maximum(max_count, counts)
        min_dist = min(min_dist, dist)
    return max_count, min_dist


def auto_sel(max_count: np.ndarray, factor: float) -> list[int]:
    """sel[t] = 4 ceil(int(max_nbor[t] * factor) / 4): the product truncated, then rounded up to a multiple of 4."""
    return [int(4 * math.ceil(int(c * factor) / 4)) for c in max_count]


def resolve_sel(systems: list[System], rcut: float, sel: list[int] | str, ntypes: int,
                device: torch.device | str = "cpu") -> tuple[list[int], float, np.ndarray]:
    """Integer sel (resolving "auto"/"auto:f"), min_nbor_dist and the data's most neighbours per type; warns when
    a given sel is below the data's max."""
    max_count, min_dist = neighbor_stat(systems, rcut, ntypes, device)
    log.info("min_nbor_dist: %f", min_dist)
    log.info("max_nbor_size: %s", max_count.tolist())
    if isinstance(sel, str):
        factor = float(sel.split(":")[1]) if ":" in sel else 1.1
        resolved = auto_sel(max_count, factor)
        log.info('sel "%s" resolved to %s', sel, resolved)
        return resolved, min_dist, max_count
    for t, (s, c) in enumerate(zip(sel, max_count, strict=True)):
        if s < c:
            log.warning("sel[%d] = %d is smaller than the largest number of type-%d neighbours in the data (%d); "
                        "the farthest are dropped. Consider sel[%d] >= %d.", t, s, t, c, t, c)
    return list(sel), min_dist, max_count
