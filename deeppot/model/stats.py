"""Input statistics: davg/dstd of the environment matrix (spec §4.7) and the energy shift (spec §5.3)."""

from __future__ import annotations

import logging
from collections.abc import Iterable

import numpy as np
import torch
from torch import Tensor

from deeppot.model.env_mat import env_mat_raw

log = logging.getLogger(__name__)

STD_FLOOR = 1e-2  # DeePMD's protection: a std below this is replaced by it
STD_NO_DATA = 0.1


def env_stat_sums(rij: Tensor, nlist: Tensor, center_type: Tensor, ntypes: int, rcut: float, rcut_smth: float,
                  protection: float = 0.0, nnei: int | None = None) -> Tensor:
    """Per centre type sums (ntypes, 6): [n_r, sum s, sum s^2, n_a, sum a, sum a^2] over all Nc slots.

    Padded slots (R~ = 0) are counted, as in DeePMD. rij (nf, nloc, nslots, 3), center_type (nf, nloc); nnei: the
    model's Nc = sum(sel) when the list is trimmed to fewer slots (the dropped ones are padding: they count, add 0).
    """
    raw = env_mat_raw(rij.to(torch.float64), nlist >= 0, rcut, rcut_smth, protection)  # (nf, nloc, nslots, 4)
    nnei = raw.shape[2] if nnei is None else nnei
    s, a = raw[..., 0].sum(-1), raw[..., 1:].sum((-1, -2))  # per atom (nf, nloc)
    s2, a2 = raw[..., 0].square().sum(-1), raw[..., 1:].square().sum((-1, -2))
    onehot = torch.nn.functional.one_hot(center_type.reshape(-1), ntypes).to(torch.float64)  # (nf*nloc, ntypes)
    per_atom = torch.stack([torch.full_like(s, float(nnei)), s, s2, torch.full_like(s, 3.0 * nnei), a, a2], -1)
    return onehot.T @ per_atom.reshape(-1, 6)


def davg_dstd_from_sums(sums: Tensor, nnei: int, set_davg_zero: bool = False) -> tuple[Tensor, Tensor]:
    """davg, dstd (ntypes, nnei, 4) from env_stat_sums accumulated over the statistics sample."""
    ntypes = sums.shape[0]
    davg = torch.zeros(ntypes, nnei, 4, dtype=torch.float64)
    dstd = torch.full((ntypes, nnei, 4), STD_NO_DATA, dtype=torch.float64)
    for t in range(ntypes):
        n_r, s, s2, n_a, a, a2 = sums[t].tolist()
        if n_r == 0:
            continue
        mean = s / n_r
        std_r = max(s2 / n_r - mean * mean, 0.0) ** 0.5
        std_a = max(a2 / n_a - (a / n_a) ** 2, 0.0) ** 0.5
        if not set_davg_zero:
            davg[t, :, 0] = mean
        dstd[t, :, 0] = max(std_r, STD_FLOOR)
        dstd[t, :, 1:] = max(std_a, STD_FLOOR)
    return davg, dstd


def energy_bias(type_counts: np.ndarray, energies: np.ndarray) -> tuple[np.ndarray, float]:
    """Least-squares per-type energy shift b from E_f ~ sum_t n_{f,t} b_t over sampled frames (spec §5.3).

    type_counts (nframes, ntypes), energies (nframes,) -> bias (ntypes,), RMSE per atom of the fit.
    """
    bias, *_ = np.linalg.lstsq(type_counts.astype(np.float64), energies.astype(np.float64), rcond=None)
    residual = energies - type_counts @ bias
    rmse_per_atom = float(np.sqrt(np.mean((residual / type_counts.sum(-1)) ** 2)))
    return bias, rmse_per_atom


def set_statistics(model, pair_batches: Iterable, energies: Iterable[tuple[np.ndarray, np.ndarray]]) -> None:
    """Fill the model's davg/dstd and out_bias from the statistics sample.

    pair_batches: PairData of the sampled frames; energies: (type_counts (nf, ntypes), energy (nf,)) per batch.
    """
    d = model.descriptor
    sums = torch.zeros(d.ntypes, 6, dtype=torch.float64)
    for pairs in pair_batches:
        sums += env_stat_sums(pairs.rij, pairs.nlist_loc, pairs.center_type, d.ntypes, d.rcut, d.rcut_smth,
                              d.env_protection, sum(d.sel)).cpu()
    davg, dstd = davg_dstd_from_sums(sums, sum(d.sel), d.set_davg_zero)
    d.davg.copy_(davg.to(d.davg))
    d.dstd.copy_(dstd.to(d.dstd))
    counts, values = zip(*energies, strict=True)
    bias, rmse = energy_bias(np.concatenate(counts), np.concatenate(values))
    model.fitting.out_bias.copy_(torch.as_tensor(bias, dtype=torch.float64))
    log.info("RMSE of energy per atom after linear regression is: %.6e eV", rmse)
