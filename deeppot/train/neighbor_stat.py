"""Neighbour statistics over the training data: max neighbours per type, min distance, automatic sel (§3.3)."""

from __future__ import annotations

import logging
import math

import numpy as np
import torch

from deeppot.data import System
from deeppot.nlist import extend_coords

log = logging.getLogger(__name__)

CHUNK_PAIRS = 2e7  # distances per chunk of frames: bounds memory


def system_neighbor_stat(system: System, rcut: float, ntypes: int,
                         device: torch.device | str = "cpu") -> tuple[np.ndarray, float]:
    """Max count of type-t neighbours within rcut over all atoms and frames (ntypes,), and the min distance."""
    max_count = np.zeros(ntypes, dtype=np.int64)
    min_dist = math.inf
    natoms = system.natoms
    atype = torch.as_tensor(system.atype, device=device)
    per_frame = natoms * natoms * 27
    chunk = max(1, int(CHUNK_PAIRS // per_frame))
    for start in range(0, system.nframes, chunk):
        coord = torch.as_tensor(system.coord[start:start + chunk], device=device)
        box = None if system.box is None else torch.as_tensor(system.box[start:start + chunk], device=device)
        nf = coord.shape[0]
        ext_coord, ext_atype, _ = extend_coords(coord, atype[None].expand(nf, -1), box, rcut)
        dist = torch.cdist(ext_coord[:, :natoms], ext_coord)  # (nf, nloc, nall)
        diag = torch.arange(natoms, device=device)
        dist[:, diag, diag] = math.inf  # an atom is not its own neighbour
        within = dist < rcut
        counts = torch.stack([(within & (ext_atype[:, None, :] == t)).sum(-1).amax() for t in range(ntypes)])
        max_count = np.maximum(max_count, counts.cpu().numpy())
        min_dist = min(min_dist, float(dist.min()))
    return max_count, min_dist


def neighbor_stat(systems: list[System], rcut: float, ntypes: int,
                  device: torch.device | str = "cpu") -> tuple[np.ndarray, float]:
    max_count = np.zeros(ntypes, dtype=np.int64)
    min_dist = math.inf
    for system in systems:
        counts, dist = system_neighbor_stat(system, rcut, ntypes, device)
        max_count = np.maximum(max_count, counts)
        min_dist = min(min_dist, dist)
    return max_count, min_dist


def auto_sel(max_count: np.ndarray, factor: float) -> list[int]:
    """sel[t] = 4 ceil(int(max_nbor[t] * factor) / 4): the product truncated, then rounded up to a multiple of 4."""
    return [int(4 * math.ceil(int(c * factor) / 4)) for c in max_count]


def resolve_sel(systems: list[System], rcut: float, sel: list[int] | str, ntypes: int,
                device: torch.device | str = "cpu") -> tuple[list[int], float]:
    """Integer sel (resolving "auto"/"auto:f") and min_nbor_dist; warns when a given sel is below the data's max."""
    max_count, min_dist = neighbor_stat(systems, rcut, ntypes, device)
    log.info("min_nbor_dist: %f", min_dist)
    log.info("max_nbor_size: %s", max_count.tolist())
    if min_dist < 1e-6:
        raise ValueError(f"two atoms overlap in the training data (min distance {min_dist:.3g} Å)")
    if isinstance(sel, str):
        factor = float(sel.split(":")[1]) if ":" in sel else 1.1
        resolved = auto_sel(max_count, factor)
        log.info('sel "%s" resolved to %s', sel, resolved)
        return resolved, min_dist
    for t, (s, c) in enumerate(zip(sel, max_count, strict=True)):
        if s < c:
            log.warning("sel[%d] = %d is smaller than the largest number of type-%d neighbours in the data (%d); "
                        "the farthest are dropped. Consider sel[%d] >= %d.", t, s, t, c, t, c)
    return list(sel), min_dist
