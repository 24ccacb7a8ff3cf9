"""Fused inference kernels against their PyTorch twins: T = sum_j R_j^T G_j / nnei and dE/dr_ij from dE/dT."""

from __future__ import annotations

import pytest
import torch
from helpers import make_model, random_system

from deeppot.infer.evaluate import FlatNeighbors, reference_pair_stage
from deeppot.model import analytic
from deeppot.nlist import build_neighbor_data

kernels = pytest.importorskip("deeppot.kernels.descriptor")
pytestmark = pytest.mark.filterwarnings("ignore::deeppot.nlist.NeighborOverflowWarning")
if kernels.embedding.triton is None:
    pytest.skip("triton is not installed", allow_module_level=True)

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
TOL = {torch.float64: dict(rtol=1e-12, atol=1e-12), torch.float32: dict(rtol=2e-5, atol=2e-5)}

CASES = [  # (type_one_side, precision, neuron, sel, ntypes): doubling, same-width and no skips; partial chunks
    (True, "float64", (4, 8, 16), (5, 40), 2),
    (False, "float64", (4, 8, 16), (5, 40), 2),
    (True, "float32", (4, 8, 16), (33, 7), 2),
    (False, "float32", (6, 6, 12), (20, 20, 20), 3),
    (False, "float64", (5, 10, 7), (30, 3, 12), 3),
    (True, "float32", (25, 50, 100), (46, 92), 2),  # the water benchmark's net
]


def chunk_of(type_one_side, precision, neuron, sel, ntypes, seed=0, exclude_types=None):
    """A random model on DEVICE and the pair data of all centres of two random frames."""
    model = make_model(seed=seed, type_one_side=type_one_side, resnet_dt=False, precision=precision,
                       neuron=list(neuron), sel=list(sel), ntypes=ntypes, exclude_types=exclude_types or []).to(DEVICE)
    coord, atype, box = random_system(natoms=12, ntypes=ntypes, nframes=2, seed=seed)
    nd = build_neighbor_data(coord.to(DEVICE), atype[None].expand(2, -1).to(DEVICE), box.to(DEVICE), model.rcut,
                             model.sel)
    flat = FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping)
    rij = flat.pair_vectors(0, flat.ncentre, model.rcut).to(model.descriptor.dtype)
    nlist_loc, neighbor_type = flat.neighbor_owner_and_type(0, flat.ncentre)
    return model, rij, nlist_loc, flat.center_type, neighbor_type


@pytest.mark.parametrize(("type_one_side", "precision", "neuron", "sel", "ntypes"), CASES)
def test_kernels_equal_their_pytorch_twins(type_one_side, precision, neuron, sel, ntypes):
    model, rij, nlist_loc, center_type, neighbor_type = chunk_of(type_one_side, precision, neuron, sel, ntypes)
    d = model.descriptor
    assert kernels.unfusable_reason(model, DEVICE) is None
    args = rij[None], nlist_loc[None], center_type[None], neighbor_type[None]
    rows = analytic.env_rows(d, *args)
    g, dg = analytic.embed_all(d, rows.rr, center_type[None])
    t_ref = torch.einsum("fnjc,fnjm->fncm", rows.rr, g)[0] / sum(d.sel)
    t_mat = kernels.descriptor_t(d, rij, center_type)
    torch.testing.assert_close(t_mat, t_ref, **TOL[d.dtype])
    t_bar = torch.randn(t_mat.shape, generator=torch.Generator().manual_seed(1), dtype=t_mat.dtype).to(DEVICE)
    grad = kernels.pair_grad_from_t_bar(d, rij, center_type, t_bar)
    grad_ref = analytic.pair_grad(d, rows, g, dg, t_bar[None])[0]
    scale = grad_ref.abs().max()
    torch.testing.assert_close(grad / scale, grad_ref / scale, **TOL[d.dtype])


@pytest.mark.parametrize("sync_free", [False, True])
@pytest.mark.parametrize("type_one_side", [True, False])
def test_fused_stage_equals_reference_stage(type_one_side, sync_free):
    """The whole stage, fitting net and dE/dT included, in float64: energies and dE/dr_ij to rounding; with
    sync_free (CUDA graphs) every fitting net runs on every atom instead of on its own type's."""
    model, *chunk = chunk_of(type_one_side, "float64", (4, 8, 16), (24, 24), 2, seed=3)
    energy, grad = kernels.fused_pair_stage(model, *chunk, sync_free=sync_free)
    energy_ref, grad_ref = reference_pair_stage(model, *chunk)
    torch.testing.assert_close(energy, energy_ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(grad, grad_ref, rtol=1e-10, atol=1e-12)
    assert grad_ref.abs().max() > 1e-5  # the comparison is not between zeros


def test_unfusable_models_are_named():
    model = make_model(resnet_dt=True)  # the helper's nets have a timestep
    assert "resnet_dt" in kernels.unfusable_reason(model, DEVICE)


@pytest.mark.parametrize(("type_one_side", "exclude", "sync_free"),
                         [(True, [[0, 1]], False), (False, [[0, 1]], True), (False, [[1, 1]], False)])
def test_fused_stage_with_exclude_types(type_one_side, exclude, sync_free):
    """Excluded pairs reach the kernels as padded slots and their padding terms are taken off T: the whole stage
    equals the reference stage, which zeroes the excluded rows (float64)."""
    model, rij, nlist_loc, center_type, neighbor_type = chunk_of(type_one_side, "float64", (4, 8, 16), (24, 24),
                                                                 2, seed=3, exclude_types=exclude)
    assert kernels.unfusable_reason(model, DEVICE) is None
    excluded = model.descriptor.excluded[center_type[:, None], neighbor_type.clamp(min=0)] & (neighbor_type >= 0)
    assert excluded.sum() > 10 and (~excluded & (neighbor_type >= 0)).sum() > 10
    energy, grad = kernels.fused_pair_stage(model, rij, nlist_loc, center_type, neighbor_type, sync_free=sync_free)
    energy_ref, grad_ref = reference_pair_stage(model, rij, nlist_loc, center_type, neighbor_type)
    torch.testing.assert_close(energy, energy_ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(grad, grad_ref, rtol=1e-10, atol=1e-12)
    assert grad[excluded].abs().max() == 0
    model.descriptor.exclude_types = []  # the same nets without the exclusion give other energies
    model.descriptor.excluded.zero_()
    assert (reference_pair_stage(model, rij, nlist_loc, center_type, neighbor_type)[0] - energy).abs().max() > 1e-6


@pytest.mark.parametrize(("atoms", "slots", "case"),
                         [(4, 16, 2), (2, 8, 3), (8, 4, 3), (16, 2, 2), (8, 8, 5), (2, 16, 1), (4, 8, 4)])
def test_atom_tiles_equal_one_atom_kernels(monkeypatch, atoms, slots, case):
    """Several centres per program, of mixed types (random frames) and a last partial tile (24 centres): T and
    dE/dr_ij equal the one-atom kernels' (float32 and float64)."""
    from deeppot.kernels import atom_tiles

    model, rij, _, center_type, _ = chunk_of(*CASES[case], seed=5)
    d = model.descriptor
    monkeypatch.setitem(atom_tiles.TILES, d.dtype, {"t": (atoms, slots, 4), "grad": (atoms, slots, 4)})
    assert len(center_type.unique()) > 1
    t_mat = atom_tiles.descriptor_t(d, rij, center_type)
    torch.testing.assert_close(t_mat, kernels.one_atom_t(d, rij, center_type), **TOL[d.dtype])
    t_bar = torch.randn(t_mat.shape, generator=torch.Generator().manual_seed(2), dtype=t_mat.dtype).to(DEVICE)
    grad = atom_tiles.pair_grad_from_t_bar(d, rij, center_type, t_bar)
    grad_ref = kernels.one_atom_pair_grad(d, rij, center_type, t_bar)
    scale = grad_ref.abs().max()
    assert scale > 0
    torch.testing.assert_close(grad / scale, grad_ref / scale, **TOL[d.dtype])
