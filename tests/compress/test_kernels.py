"""The compressed Triton kernels against their PyTorch twins (tables read by `deeppot.model.tabulate`), on tiny
cases: on a GPU, or under Triton's interpreter on a CPU."""

from __future__ import annotations

import copy

import pytest
import torch
from helpers import make_model, random_system

from deeppot.infer.evaluate import FlatNeighbors, evaluate_flat, reference_pair_stage
from deeppot.kernels.reach import find_reach
from deeppot.model import analytic
from deeppot.nlist import build_neighbor_data

kernels = pytest.importorskip("deeppot.kernels.compressed")
pytestmark = pytest.mark.filterwarnings("ignore::deeppot.nlist.NeighborOverflowWarning")
if kernels.embedding.triton is None:
    pytest.skip("triton is not installed", allow_module_level=True)

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
TOL = {torch.float64: dict(rtol=1e-12, atol=1e-12), torch.float32: dict(rtol=2e-5, atol=2e-5)}

CASES = [  # (type_one_side, precision, neuron, sel, ntypes): M1 a power of two or not; chunks full and partial
    (True, "float64", (4, 8, 16), (5, 40), 2),
    (False, "float64", (5, 10, 7), (30, 3, 12), 3),
    (True, "float32", (4, 8, 12), (33, 7), 2),
    (False, "float32", (6, 6, 12), (20, 20), 2),
]


def chunk_of(type_one_side, precision, neuron, sel, ntypes, seed=0, exclude_types=()):
    """A compressed random model on DEVICE (tables for r_min 2.0 while atoms come to 0.8 and e = 1.2, so rows fall
    in both strides and beyond the table) and the pair data of all centres of two frames."""
    model = make_model(seed=seed, type_one_side=type_one_side, resnet_dt=False, precision=precision,
                       neuron=list(neuron), sel=list(sel), ntypes=ntypes, exclude_types=list(exclude_types))
    with torch.no_grad():
        model.descriptor.dstd[..., 0] = 0.3
    model.descriptor.enable_compression(2.0, 0.01, 1.2)
    model = model.to(DEVICE)
    coord, atype, box = random_system(natoms=12, ntypes=ntypes, nframes=2, seed=seed, min_dist=0.8)
    nd = build_neighbor_data(coord.to(DEVICE), atype[None].expand(2, -1).to(DEVICE), box.to(DEVICE), model.rcut,
                             model.sel)
    flat = FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping)
    return model, flat


@pytest.mark.parametrize("tile", [(1, 16), (16, 4)], ids=["one-atom", "tiles-16x4"])
@pytest.mark.parametrize(("type_one_side", "precision", "neuron", "sel", "ntypes"), CASES)
def test_kernels_equal_their_pytorch_twins(type_one_side, precision, neuron, sel, ntypes, tile, monkeypatch):
    """Both program layouts: one atom a program, and tiles of 16 atoms (24 centres of mixed types: the tiles mix
    centre types, the last one is partial, and blocks end inside a chunk)."""
    monkeypatch.setitem(kernels.TILES, getattr(torch, precision), {"t": (*tile, 4), "grad": (*tile, 4)})
    model, flat = chunk_of(type_one_side, precision, neuron, sel, ntypes)
    d = model.descriptor
    assert kernels.unfusable_reason(model, DEVICE) is None
    rij = flat.pair_vectors(0, flat.ncentre, model.rcut).to(d.dtype)
    nlist_loc, neighbor_type = flat.neighbor_owner_and_type(0, flat.ncentre)
    center_type = flat.center_type
    rows = analytic.env_rows(d, rij[None], nlist_loc[None], center_type[None], neighbor_type[None])
    info = d.tables.info_values[0]
    live = rows.rr[..., 0][nlist_loc[None] >= 0]
    assert (live > info[1]).any() and (live > info[2]).any()  # second stride and beyond the table are exercised
    g, dg = analytic.embed_all(d, rows.rr, center_type[None])
    t_ref = torch.einsum("fnjc,fnjm->fncm", rows.rr, g)[0] / sum(d.sel)
    t_mat = kernels.compressed_descriptor_t(d, rij, center_type)
    torch.testing.assert_close(t_mat, t_ref, **TOL[d.dtype])
    t_bar = torch.randn(t_mat.shape, generator=torch.Generator().manual_seed(1), dtype=t_mat.dtype).to(DEVICE)
    grad = kernels.compressed_pair_grad(d, rij, center_type, t_bar)
    grad_ref = analytic.pair_grad(d, rows, g, dg, t_bar[None])[0]
    scale = grad_ref.abs().max()
    torch.testing.assert_close(grad / scale, grad_ref / scale, **TOL[d.dtype])


@pytest.mark.parametrize("tile", [(1, 16), (4, 4)], ids=["one-atom", "tiles-4x4"])
@pytest.mark.parametrize("case", [1, 2])
def test_kernels_skip_the_padding(case, tile, monkeypatch):
    """Walking each block only up to the program's furthest neighbour (`deeppot.kernels.reach`) and adding the
    tail gives T and dE/dr_ij of visiting every slot."""
    monkeypatch.setitem(kernels.TILES, getattr(torch, CASES[case][1]), {"t": (*tile, 4), "grad": (*tile, 4)})
    model, flat = chunk_of(*CASES[case])
    d = model.descriptor
    rij = flat.pair_vectors(0, flat.ncentre, model.rcut).to(d.dtype)
    neighbor_type = flat.neighbor_owner_and_type(0, flat.ncentre)[1]
    reach = find_reach(d, flat.center_type, neighbor_type)
    assert (reach.reach < reach.reach.new_tensor(d.sel)).any()
    t_full = kernels.compressed_descriptor_t(d, rij, flat.center_type)
    t_mat = kernels.compressed_descriptor_t(d, rij, flat.center_type, reach=reach)
    torch.testing.assert_close(t_mat, t_full, **TOL[d.dtype])
    t_bar = torch.randn(t_mat.shape, generator=torch.Generator().manual_seed(1), dtype=t_mat.dtype).to(DEVICE)
    grad = kernels.compressed_pair_grad(d, rij, flat.center_type, t_bar, reach=reach)
    torch.testing.assert_close(grad, kernels.compressed_pair_grad(d, rij, flat.center_type, t_bar), **TOL[d.dtype])


@pytest.mark.parametrize(("by_type", "scatters"), [(False, False), (True, False), (True, True)])
def test_pair_stage_in_the_evaluator(by_type, scatters):
    """Chunks of 7 centres; by_type: each chunk's centres of each type given (as `Evaluator` does), else found;
    scatters: the stage adds the forces and virials itself (`scatter.back_and_scatter`), as in `Evaluator`."""
    from deeppot.kernels.pairs import pair_data
    from deeppot.kernels.scatter import scatter_forces_and_virial

    model, flat = chunk_of(True, "float64", (4, 8, 16), (5, 40), 2)
    ref = evaluate_flat(model, flat, 7, reference_pair_stage)
    fast = dict(scatter=scatter_forces_and_virial, pairs=pair_data, stage_scatters=True) if scatters else {}
    out = evaluate_flat(model, flat, 7, kernels.compressed_pair_stage, by_type=by_type, **fast)
    assert len(flat.type_rows) == (4 if by_type else 0)
    for key in ("atom_energy", "force", "virial"):
        torch.testing.assert_close(out[key], ref[key], rtol=1e-11, atol=1e-11)


def test_pair_stage_with_exclude_types():
    """Excluded pairs go to the kernels as padded slots, the padding terms (from the tables) come off T."""
    model, flat = chunk_of(False, "float64", (4, 8, 16), (12, 24), 2, exclude_types=[[0, 1]])
    ref = evaluate_flat(model, flat, 7, reference_pair_stage)
    out = evaluate_flat(model, flat, 7, kernels.compressed_pair_stage)
    for key in ("atom_energy", "force", "virial"):
        torch.testing.assert_close(out[key], ref[key], rtol=1e-11, atol=1e-11)
    model.descriptor.excluded.zero_()  # not a comparison of two paths that both ignore the exclusion
    assert (evaluate_flat(model, flat, 7, reference_pair_stage)["energy"] - ref["energy"]).abs().max() > 1e-6


def test_unfusable_reasons():
    model, _ = chunk_of(True, "float64", (4, 8, 16), (5, 40), 2)
    plain = copy.deepcopy(model)
    plain.descriptor.tables = None
    assert "not compressed" in kernels.unfusable_reason(plain, DEVICE)
    excluded = make_model(resnet_dt=False, neuron=[4, 8, 16], exclude_types=[[0, 1]])
    excluded.descriptor.enable_compression(1.0)
    assert kernels.unfusable_reason(excluded, DEVICE) is None  # padding rows reach the excluded pairs' nets too


def test_tables_beyond_the_kernels_reach_go_to_pytorch(monkeypatch):
    """A table row's number travels as a value of the descriptor's precision (exact up to 2^24 in float32): more
    rows than that leave the model to the PyTorch path instead of a wrong row."""
    model, _ = chunk_of(True, "float64", (4, 8, 16), (5, 40), 2)
    rows = sum(model.descriptor.tables.data(k).shape[0] for k in range(model.descriptor.tables.nnets))
    monkeypatch.setitem(kernels._MAX_ROWS, torch.float64, rows - 1)
    assert "rows" in kernels.unfusable_reason(model, DEVICE)
    monkeypatch.setitem(kernels._MAX_ROWS, torch.float64, rows)
    assert kernels.unfusable_reason(model, DEVICE) is None


def test_evaluator_picks_the_compressed_kernels():
    from deeppot.infer.deep_pot import Evaluator

    model, _ = chunk_of(False, "float64", (4, 8, 16), (10, 10), 2)
    fused, plain = Evaluator(model, DEVICE, fused=True), Evaluator(model, DEVICE, fused=False)
    assert fused.pair_stage.func is kernels.compressed_pair_stage  # with the products' scheme bound
    coord, atype, box = random_system(natoms=8, nframes=1, seed=3)
    args = coord.to(DEVICE), atype[None].to(DEVICE), box.to(DEVICE)
    ours, ref = fused.evaluate(*args), plain.evaluate(*args)
    for key in ("energy", "force", "virial"):
        torch.testing.assert_close(ours[key], ref[key], rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize(("case", "by_type"), [(1, True), (2, False), (3, True)])
def test_t_kernel_adds_the_tail_and_writes_d_itself(case, by_type, monkeypatch):
    """The compressed T kernel that adds the tail before it stores T and writes D (each type's atoms together, or
    every atom at its own row) gives the T of the tail kernel after it and the D of `descriptor_matrix`'s kernel."""
    from deeppot.kernels import atom_tiles, descriptor, descriptor_matrix
    from deeppot.model.energy_model import type_groups

    model, flat = chunk_of(*CASES[case])
    d, ct = model.descriptor, flat.center_type
    rij = flat.pair_vectors(0, flat.ncentre, model.rcut).to(d.dtype)
    neighbor_type = flat.neighbor_owner_and_type(0, flat.ncentre)[1]
    reach = find_reach(d, ct, neighbor_type)
    assert (reach.reach < reach.reach.new_tensor(d.sel)).any()  # a tail to add
    type_rows = type_groups(ct, d.ntypes) if by_type else None
    desc, pos = descriptor.desc_rows(model, ct, not by_type, type_rows)
    t_fused = kernels.compressed_descriptor_t(d, rij, ct, reach, desc=(desc, pos))
    monkeypatch.setattr(atom_tiles, "FUSED_TAIL", False)
    t_plain = kernels.compressed_descriptor_t(d, rij, ct, find_reach(d, ct, neighbor_type))
    torch.testing.assert_close(t_fused, t_plain, **TOL[d.dtype])
    expected = descriptor_matrix.descriptor_from_t(t_plain, d.axis_neuron, model.fitting.dtype,
                                                   torch.cat(type_rows) if by_type else None)
    torch.testing.assert_close(desc, expected, **TOL[d.dtype])
