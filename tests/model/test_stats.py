"""davg/dstd and the energy bias against a direct NumPy evaluation of the spec formulas (§4.7, §5.3)."""

from __future__ import annotations

import numpy as np
from helpers import make_model, random_system

from deeppot.model import PairData
from deeppot.model.stats import energy_bias, set_statistics
from deeppot.nlist import build_neighbor_data


def numpy_env_rows(coord, box, atype, nlist_ext, ext_coord, rcut, rcut_smth):
    """R~ rows (nloc, nnei, 4) by explicit loops; padded slots are zero."""
    nloc, nnei = nlist_ext.shape
    rows = np.zeros((nloc, nnei, 4))
    for i in range(nloc):
        for j, k in enumerate(nlist_ext[i]):
            if k < 0:
                continue
            d = ext_coord[k] - ext_coord[i]
            r = np.linalg.norm(d)
            u = min(max((r - rcut_smth) / (rcut - rcut_smth), 0.0), 1.0)
            w = u**3 * (-6 * u**2 + 15 * u - 10) + 1
            rows[i, j] = w * np.array([1 / r, *(d / r**2)])
    return rows


def test_davg_dstd_and_bias_match_numpy():
    model = make_model(type_one_side=False, sel=(10, 14))
    frames = [random_system(natoms=9, box_len=5.0, seed=s) for s in range(3)]
    pair_batches, energies, all_rows, all_types = [], [], [], []
    rng = np.random.default_rng(0)
    for coord, atype, box in frames:
        nd = build_neighbor_data(coord, atype[None], box, model.rcut, model.sel)
        pair_batches.append(PairData.from_neighbors(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping, model.rcut))
        counts = np.bincount(atype.numpy(), minlength=2)[None].astype(float)
        energies.append((counts, rng.normal(size=1) * 3 + counts @ np.array([-2.0, -0.5])))
        all_rows.append(numpy_env_rows(coord[0].numpy(), box[0].numpy(), atype.numpy(), nd.nlist[0].numpy(),
                                       nd.ext_coord[0].numpy(), model.rcut, model.descriptor.rcut_smth))
        all_types.append(atype.numpy())
    set_statistics(model, pair_batches, energies)

    rows, types = np.concatenate(all_rows), np.concatenate(all_types)
    for t in range(2):
        s = rows[types == t][..., 0].ravel()
        a = rows[types == t][..., 1:].ravel()
        mean = s.mean()
        std_r = max(np.sqrt(max((s**2).mean() - mean**2, 0)), 1e-2)
        std_a = max(np.sqrt(max((a**2).mean() - a.mean() ** 2, 0)), 1e-2)
        np.testing.assert_allclose(model.descriptor.davg[t, :, 0].numpy(), mean, rtol=1e-12)
        np.testing.assert_allclose(model.descriptor.davg[t, :, 1:].numpy(), 0.0)
        np.testing.assert_allclose(model.descriptor.dstd[t, :, 0].numpy(), std_r, rtol=1e-12)
        np.testing.assert_allclose(model.descriptor.dstd[t, :, 1:].numpy(), std_a, rtol=1e-12)

    counts = np.concatenate([c for c, _ in energies])
    e = np.concatenate([v for _, v in energies])
    expected, *_ = np.linalg.lstsq(counts, e, rcond=None)
    np.testing.assert_allclose(model.fitting.out_bias.numpy(), expected, rtol=1e-10)


def test_energy_bias_recovers_exact_shift():
    counts = np.array([[64.0, 128.0], [32.0, 64.0], [10.0, 3.0]])
    truth = np.array([-93.5, -187.2])
    bias, rmse = energy_bias(counts, counts @ truth)
    np.testing.assert_allclose(bias, truth, rtol=1e-10)
    assert rmse < 1e-10
