"""Fused inference kernels against their PyTorch twins: T = sum_j R_j^T G_j / nnei and dE/dr_ij from dE/dT."""

from __future__ import annotations

import pytest
import torch
from helpers import make_model, random_system

from deeppot.infer.evaluate import FlatNeighbors, evaluate_flat, reference_pair_stage
from deeppot.kernels.reach import (
    Reach,
    add_tail,
    add_tail_reference,
    find_reach,
    find_reach_reference,
    padding_terms,
    suffix_table,
    tile_tops,
    tile_tops_reference,
)
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


def assert_kernels_match_twins(case, products: str) -> None:
    """T and dE/dr_ij of the kernels (float32 products in `products`) equal their PyTorch twins' on `case`."""
    model, rij, nlist_loc, center_type, neighbor_type = chunk_of(*case)
    d = model.descriptor
    assert kernels.unfusable_reason(model, DEVICE) is None
    rows = analytic.env_rows(d, rij[None], nlist_loc[None], center_type[None], neighbor_type[None])
    g, dg = analytic.embed_all(d, rows.rr, center_type[None])
    t_ref = torch.einsum("fnjc,fnjm->fncm", rows.rr, g)[0] / sum(d.sel)
    t_mat = kernels.descriptor_t(d, rij, center_type, products)
    torch.testing.assert_close(t_mat, t_ref, **TOL[d.dtype])
    t_bar = torch.randn(t_mat.shape, generator=torch.Generator().manual_seed(1), dtype=t_mat.dtype).to(DEVICE)
    grad = kernels.pair_grad_from_t_bar(d, rij, center_type, t_bar, products)
    grad_ref = analytic.pair_grad(d, rows, g, dg, t_bar[None])[0]
    scale = grad_ref.abs().max()
    torch.testing.assert_close(grad / scale, grad_ref / scale, **TOL[d.dtype])


@pytest.mark.parametrize("case", CASES)
def test_kernels_equal_their_pytorch_twins(case):
    assert_kernels_match_twins(case, "tf32x3")


@pytest.mark.parametrize("case", [c for c in CASES if c[1] == "float32"])
def test_f16x3_kernels_equal_their_pytorch_twins(case):
    """The float16-split products (`embedding._mm`, "f16x3") keep the kernels at float32's accuracy."""
    assert_kernels_match_twins(case, "f16x3")


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


@pytest.mark.parametrize(("scatters", "ordered"), [(False, False), (True, False), (True, True)])
def test_fused_stage_in_the_evaluator_by_type(scatters, ordered):
    """Chunks of 7 of 24 centres of three types, each chunk's centres of each type given (as `Evaluator` does):
    float64 outputs equal the reference stage's; scatters: the stage adds the forces and per-centre virials itself
    from its gradient kernel's dE/dR_ij (`scatter.back_and_scatter`), as in `Evaluator`; ordered: the chunks take
    the centres in the order of their neighbour counts (`deeppot.infer.order`), the types' rows its ranges."""
    from deeppot.infer.order import centre_order
    from deeppot.kernels.pairs import pair_data
    from deeppot.kernels.scatter import scatter_forces_and_virial

    model = chunk_of(False, "float64", (4, 8, 16), (8, 8, 8), 3, seed=4)[0]
    coord, atype, box = random_system(natoms=12, ntypes=3, nframes=2, seed=4)
    nd = build_neighbor_data(coord.to(DEVICE), atype[None].expand(2, -1).to(DEVICE), box.to(DEVICE), model.rcut,
                             model.sel)
    flat = FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping)
    fast = dict(scatter=scatter_forces_and_virial, pairs=pair_data, stage_scatters=True) if scatters else {}
    if ordered:
        fast["order"] = centre_order(flat, model.sel, 3, 7)
        assert not torch.equal(fast["order"].order, torch.arange(24, device=DEVICE))
    out = evaluate_flat(model, flat, 7, kernels.fused_pair_stage, by_type=True, **fast)
    ref = evaluate_flat(model, flat, 7, reference_pair_stage)
    assert len(flat.type_rows) == 4  # the order counts the types from them too
    for key in ("atom_energy", "force", "virial"):
        torch.testing.assert_close(out[key], ref[key], rtol=1e-11, atol=1e-11)


def test_unfusable_models_are_named():
    model = make_model(resnet_dt=True)  # the helper's nets have a timestep
    assert "resnet_dt" in kernels.unfusable_reason(model, DEVICE)


@pytest.mark.parametrize("tile", [None, (2, 8, 4)], ids=["default", "tiles-2x8"])
@pytest.mark.parametrize(("type_one_side", "exclude", "sync_free"),
                         [(True, [[0, 1]], False), (False, [[0, 1]], True), (False, [[1, 1]], False)])
def test_fused_stage_with_exclude_types(type_one_side, exclude, sync_free, tile, monkeypatch):
    """Excluded pairs enter the kernels as padding; a program that walks an excluded block for its other atoms
    adds their R_pad terms, and the tail takes them off again: the whole stage equals the reference stage, which
    zeroes the excluded rows (float64; with tiles of two atoms of mixed types too)."""
    if tile:
        from deeppot.kernels import atom_tiles

        monkeypatch.setitem(atom_tiles.TILES, torch.float64, {"t": tile, "grad": tile})
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


def held_tiles(d, rij, center_type, kernel: str) -> list[int]:
    """The rows of each TMA descriptor's tile in an f16x3 atom-tile kernel's arguments."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    from deeppot.kernels import atom_tiles

    tensors = atom_tiles._tiled_args(d, rij, center_type, "f16x3", kernel, None)[0]
    return [a.block_shape[0] for a in tensors if isinstance(a, TensorDescriptor)]


@pytest.mark.parametrize(("case", "one_box"), [(3, None), (5, None), (5, {})])
def test_atom_tiles_holding_weights_equal_loading_them(monkeypatch, case, one_box):
    """f16x3 atom tiles holding W2's and W3's parts in shared memory (TMA descriptors, `HOLD_WEIGHTS`), both parts
    of a layer in one tile (`ONE_BOX`, by default) or in two, give what the tiles loading them every chunk give,
    and equal the one-atom kernels' T and dE/dr_ij."""
    from deeppot.kernels import atom_tiles

    model, rij, _, center_type, _ = chunk_of(*CASES[case], seed=5)
    d = model.descriptor
    if one_box is not None:
        monkeypatch.setattr(atom_tiles, "ONE_BOX", one_box)
    t_bar = torch.randn(len(center_type), 4, d.neuron[-1], generator=torch.Generator().manual_seed(2)).to(DEVICE)
    widths = atom_tiles.embedding._layouts([1, *d.neuron])
    outputs = {}
    for hold in (True, False):
        monkeypatch.setattr(atom_tiles, "HOLD_WEIGHTS", hold)
        for kernel in ("t", "grad"):
            layers = atom_tiles.ONE_BOX.get(kernel, ()) if hold else ()
            expected = [(2 if layer in layers else 1) * widths[layer - 2][0] for layer in (2, 3)] if hold else []
            assert held_tiles(d, rij, center_type, kernel) == expected
        outputs[hold] = (atom_tiles.descriptor_t(d, rij, center_type, "f16x3"),
                         atom_tiles.pair_grad_from_t_bar(d, rij, center_type, t_bar, "f16x3"))
    references = (kernels.one_atom_t(d, rij, center_type), kernels.one_atom_pair_grad(d, rij, center_type, t_bar))
    for held, loaded, reference in zip(outputs[True], outputs[False], references, strict=True):
        scale = reference.abs().max()
        torch.testing.assert_close(held, loaded, rtol=0, atol=1e-6 * scale)
        torch.testing.assert_close(held / scale, reference / scale, **TOL[d.dtype])


def test_the_gradient_holds_its_second_layer_in_two_tiles_where_w1_is_large():
    """The gradient kernel's second layer takes the tangent (1 - x^2) w1, which `embedding._mm_stacked` scales by
    2^11 in float16: with some |W1| over `precision.STACKED_LIMIT`, its parts stay in two tiles; T's do not."""
    from deeppot.kernels import atom_tiles, precision

    model, rij, _, center_type, _ = chunk_of(*CASES[5], seed=5)
    d = model.descriptor
    widths = [layout[0] for layout in atom_tiles.embedding._layouts([1, *d.neuron])]
    assert held_tiles(d, rij, center_type, "grad") == [2 * widths[0], widths[1]]
    with torch.no_grad():
        d.nets.layers[0].matrix[0, 0, 0] = 2 * precision.STACKED_LIMIT
    assert held_tiles(d, rij, center_type, "grad") == [widths[0], widths[1]]
    assert held_tiles(d, rij, center_type, "t") == [2 * widths[0], 2 * widths[1]]


@pytest.mark.parametrize("case", [3, 5])
def test_float32_atom_tiles_on_prescaled_biases_equal_plain_ones(monkeypatch, case):
    """Float32 atom tiles given their biases (and T its first layer's weights) times `activation.TANH_SCALE`, folded
    into their products' scale (`PRESCALED`), give the T and dE/dr_ij of the tiles without it."""
    from deeppot.kernels import atom_tiles
    from deeppot.kernels.activation import TANH_SCALE

    model, rij, _, center_type, _ = chunk_of(*CASES[case], seed=5)
    d = model.descriptor
    t_bar = torch.randn(len(center_type), 4, d.neuron[-1], generator=torch.Generator().manual_seed(2)).to(DEVICE)
    nets = d.nets.layers
    params = {"w1": nets[0].matrix, "b1": nets[0].bias, "b2": nets[1].bias, "b3": nets[2].bias}
    taken = {"t": set(params), "grad": {"b2", "b3"}}  # the gradient's tangent takes W1 as it is
    outputs = {}
    for prescaled in (True, False):
        monkeypatch.setattr(atom_tiles, "PRESCALED", prescaled)
        for kernel in ("t", "grad"):
            args = atom_tiles._tiled_args(d, rij, center_type, "f16x3", kernel, None)[0]
            for at, name in zip((-7, -6, -4, -2), params, strict=True):  # the nets' six, then the rows
                factor = TANH_SCALE if prescaled and name in taken[kernel] else 1.0
                torch.testing.assert_close(args[at], params[name].detach() * factor, rtol=1e-7, atol=0)
        outputs[prescaled] = (atom_tiles.descriptor_t(d, rij, center_type, "f16x3"),
                              atom_tiles.pair_grad_from_t_bar(d, rij, center_type, t_bar, "f16x3"))
    for prescaled, plain in zip(outputs[True], outputs[False], strict=True):
        scale = plain.abs().max()
        assert scale > 0
        torch.testing.assert_close(prescaled, plain, rtol=0, atol=1e-6 * scale)


@pytest.mark.parametrize(("case", "weights"), [(3, "one tile"), (5, "one tile"), (5, "two tiles"), (5, "loaded")])
def test_transposed_t_chunks_equal_plain_ones(monkeypatch, case, weights):
    """The f16x3 T kernel with its last layer and contraction transposed (`TRANSPOSED_T`) gives the T of the plain
    chunks, the block-diagonal R read from the shared rows, with same-width and doubling skips (case 3) and water's
    net (case 5); W3's parts held by TMA in one tile (`ONE_BOX`) or two, or loaded every chunk (`HOLD_WEIGHTS` off):
    each a branch of `embedding._mm_t`. Without shared rows the plain kernel runs."""
    from deeppot.kernels import atom_tiles

    model, rij, _, center_type, neighbor_type = chunk_of(*CASES[case], seed=5)
    d = model.descriptor
    monkeypatch.setattr(atom_tiles, "ROWS", {d.dtype})
    monkeypatch.setattr(atom_tiles, "ONE_BOX", {} if weights == "two tiles" else atom_tiles.ONE_BOX)
    monkeypatch.setattr(atom_tiles, "HOLD_WEIGHTS", weights != "loaded")
    reach = find_reach(d, center_type, neighbor_type)
    shared = atom_tiles.shared_rows(d, rij, center_type, reach, "f16x3")
    assert set(shared) == {"rows"}
    assert not atom_tiles._tiled_args(d, rij, center_type, "f16x3", "t", reach)[1]["TRANSPOSED"]  # no rows given
    outputs = []
    for transposed in (False, True):
        monkeypatch.setattr(atom_tiles, "TRANSPOSED_T", transposed)
        assert atom_tiles._tiled_args(d, rij, center_type, "f16x3", "t", reach, **shared)[1]["TRANSPOSED"] == transposed
        outputs.append(atom_tiles.descriptor_t(d, rij, center_type, "f16x3", reach=reach, **shared))
    scale = outputs[0].abs().max()
    assert scale > 0
    torch.testing.assert_close(outputs[1], outputs[0], rtol=0, atol=1e-6 * scale)
    torch.testing.assert_close(outputs[1], kernels.one_atom_t(d, rij, center_type), **TOL[d.dtype])


@pytest.mark.parametrize("case", [3, 5])
def test_rows_read_a_chunk_ahead_equal_rows_read_in_the_chunk(monkeypatch, case):
    """With `READ_AHEAD`, the transposed T kernel and the gradient kernel load each chunk's shared rows one chunk
    before they use them (`_read_ahead`): T and dE/dr_ij are those of the chunks reading their own rows, over
    blocks of several chunks each, and equal the one-atom kernels'."""
    from deeppot.kernels import atom_tiles

    model, rij, _, center_type, neighbor_type = chunk_of(*CASES[case], seed=5)
    d = model.descriptor
    monkeypatch.setattr(atom_tiles, "ROWS", {d.dtype})
    monkeypatch.setattr(atom_tiles, "TRANSPOSED_T", True)
    monkeypatch.setattr(atom_tiles, "F16X3_TILES", {"t": (4, 4, 4), "grad": (4, 4, 4)})  # chunks of four slots
    t_bar = torch.randn(len(center_type), 4, d.neuron[-1], generator=torch.Generator().manual_seed(2)).to(DEVICE)
    reach = find_reach(d, center_type, neighbor_type)
    outputs = []
    for ahead in (frozenset(), frozenset({"t", "grad"})):
        monkeypatch.setattr(atom_tiles, "READ_AHEAD", ahead)
        (_, t_meta, _), (_, grad_meta, tops) = [atom_tiles._tiled_args(d, rij, center_type, "f16x3", kernel, reach,
                                                                       rij) for kernel in ("t", "grad")]
        assert [t_meta["AHEAD"], grad_meta["AHEAD"]] == ([1, 2] if ahead else [0, 0])
        assert tops.max() > 2 * grad_meta["SLOTS"]  # blocks of three chunks or more
        shared = atom_tiles.shared_rows(d, rij, center_type, reach, "f16x3")
        t_mat = atom_tiles.descriptor_t(d, rij, center_type, "f16x3", reach=reach, **shared)
        outputs.append((t_mat, atom_tiles.pair_grad_from_t_bar(d, rij, center_type, t_bar, "f16x3", reach=reach,
                                                               **shared)))
    references = (kernels.one_atom_t(d, rij, center_type), kernels.one_atom_pair_grad(d, rij, center_type, t_bar))
    for plain, ahead, reference in zip(*outputs, references, strict=True):
        scale = reference.abs().max()
        torch.testing.assert_close(ahead, plain, rtol=0, atol=1e-6 * scale)
        torch.testing.assert_close(ahead / scale, reference / scale, **TOL[d.dtype])


@pytest.mark.parametrize("case", [2, 3, 4])
def test_atom_tiles_reading_shared_rows_equal_computing_them(monkeypatch, case):
    """With the slots' environment rows made once (`shared_rows`, for tiles of another shape in each kernel, so that
    the rows cover either kernel's walk), T and dE/dr_ij equal the kernels' own rows', padding skipped."""
    from deeppot.kernels import atom_tiles

    model, rij, _, center_type, neighbor_type = chunk_of(*CASES[case], seed=5)
    d = model.descriptor
    monkeypatch.setitem(atom_tiles.TILES, d.dtype, {"t": (4, 8, 4), "grad": (2, 16, 4)})
    monkeypatch.setattr(atom_tiles, "ROWS", {d.dtype})
    reach = find_reach(d, center_type, neighbor_type)
    shared = atom_tiles.shared_rows(d, rij, center_type, reach)
    assert set(shared) == {"rows"}
    t_mat = atom_tiles.descriptor_t(d, rij, center_type, reach=reach, **shared)
    torch.testing.assert_close(t_mat, atom_tiles.descriptor_t(d, rij, center_type, reach=reach), **TOL[d.dtype])
    t_bar = torch.randn(t_mat.shape, generator=torch.Generator().manual_seed(2), dtype=t_mat.dtype).to(DEVICE)
    grad = atom_tiles.pair_grad_from_t_bar(d, rij, center_type, t_bar, reach=reach, **shared)
    grad_ref = atom_tiles.pair_grad_from_t_bar(d, rij, center_type, t_bar, reach=reach)
    scale = grad_ref.abs().max()
    assert scale > 0
    torch.testing.assert_close(grad / scale, grad_ref / scale, **TOL[d.dtype])


@pytest.mark.parametrize(("atoms", "per_type"), [(1, 0), (4, 2), (5, 0)])
def test_reach_and_tail_from_the_lists(atoms, per_type):
    """The reach is one past each block's last neighbour; a program of `atoms` centres walks each block up to the
    most reach of its atoms (of each type, with per_type); the tail is what the slots after that add to T, the
    padding terms of those slots summed here one atom at a time."""
    model, _, _, center_type, neighbor_type = chunk_of(False, "float64", (4, 8, 16), (24, 24), 2, seed=3)
    d = model.descriptor
    reach = find_reach(d, center_type, neighbor_type)
    count = torch.stack([(block >= 0).sum(1) for block in neighbor_type.split(list(d.sel), dim=1)], 1)
    assert torch.equal(reach.reach.long(), count) and torch.equal(reach.last, reach.reach)  # neighbours first
    assert (count < count.new_tensor(d.sel)).all() and (count > 0).all()
    tops = tile_tops(d, reach, center_type, atoms, per_type)
    assert tile_tops(d, reach, center_type, atoms, per_type) is tops  # kept in the reach for the next kernel
    assert (tile_tops(d, None, center_type, atoms, per_type) >= tops).all()  # every slot: the block lengths
    tail = add_tail(d, torch.zeros(len(center_type), 4, 16, dtype=torch.float64, device=DEVICE), center_type, tops,
                    atoms, per_type, reach.last)
    terms, slot = padding_terms(d), torch.arange(24, device=DEVICE).repeat(2)
    expected = []
    for i, a in enumerate(center_type.tolist()):
        mine = [j for j in range(i - i % atoms, min(i - i % atoms + atoms, len(center_type)))
                if not per_type or center_type[j] == a]
        top = count[mine].amax(0).repeat_interleave(24)  # the walk of atom i's program, per slot
        expected.append(((neighbor_type[i] < 0) & (slot >= top)).to(terms.dtype) @ terms[a])
        assert (top >= count[i].repeat_interleave(24)).all()
    torch.testing.assert_close(tail, torch.stack(expected).view(tail.shape) / sum(d.sel), rtol=1e-12, atol=1e-15)
    assert tail.abs().max() > 1e-3  # davg is not zero: padding adds to T
    start = torch.randn(tail.shape, dtype=tail.dtype, generator=torch.Generator().manual_seed(5)).to(DEVICE)
    by_kernel = add_tail(d, start.clone(), center_type, tops, atoms, per_type, reach.last)  # Triton here
    by_torch = add_tail_reference(d, start.clone(), center_type, tops, atoms, per_type, reach.last)
    torch.testing.assert_close(by_kernel, by_torch, rtol=1e-14, atol=1e-15)
    torch.testing.assert_close(by_kernel - start, tail, rtol=1e-12, atol=1e-14)  # added to what T held


@pytest.mark.parametrize("case", [0, 2, 4])
def test_kernels_skip_the_padding(case):
    """Walking each block only up to the program's furthest neighbour and adding the tail gives T and dE/dr_ij of
    visiting every slot (the atom tiles in float32, one atom a program in float64)."""
    model, rij, _, center_type, neighbor_type = chunk_of(*CASES[case], seed=4)
    d = model.descriptor
    reach = find_reach(d, center_type, neighbor_type)
    assert (reach.reach < reach.reach.new_tensor(d.sel)).any()
    t_full = kernels.descriptor_t(d, rij, center_type)
    torch.testing.assert_close(kernels.descriptor_t(d, rij, center_type, reach=reach), t_full, **TOL[d.dtype])
    t_bar = torch.randn(t_full.shape, generator=torch.Generator().manual_seed(2), dtype=t_full.dtype).to(DEVICE)
    grad = kernels.pair_grad_from_t_bar(d, rij, center_type, t_bar)
    torch.testing.assert_close(kernels.pair_grad_from_t_bar(d, rij, center_type, t_bar, reach=reach), grad,
                               **TOL[d.dtype])


@pytest.mark.parametrize("tile", [None, (2, 8, 4)], ids=["default", "tiles-2x8"])
def test_stage_with_padding_inside_the_blocks(tile, monkeypatch):
    """Slots shuffled inside each block, so padding sits between neighbours: the kernels visit it up to the last
    neighbour and the tail covers the rest; the stage still equals the reference stage (float64)."""
    if tile:
        from deeppot.kernels import atom_tiles

        monkeypatch.setitem(atom_tiles.TILES, torch.float64, {"t": tile, "grad": tile})
    model, rij, nlist_loc, center_type, neighbor_type = chunk_of(False, "float64", (4, 8, 16), (24, 24), 2, seed=3)
    gen = torch.Generator().manual_seed(0)
    perm = torch.cat([start + torch.randperm(24, generator=gen) for start in (0, 24)]).to(DEVICE)
    chunk = rij[:, perm], nlist_loc[:, perm], center_type, neighbor_type[:, perm]
    assert (chunk[3][:, :23] < 0).any()
    energy, grad = kernels.fused_pair_stage(model, *chunk)
    energy_ref, grad_ref = reference_pair_stage(model, *chunk)
    torch.testing.assert_close(energy, energy_ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(grad, grad_ref, rtol=1e-10, atol=1e-12)


def test_tail_follows_the_statistics():
    """The suffix table is cached on the descriptor; changing davg in place makes a new one."""
    model, *chunk = chunk_of(True, "float64", (4, 8, 16), (24, 24), 2, seed=3)
    d = model.descriptor
    before = suffix_table(d).clone()
    with torch.no_grad():
        d.davg[..., 0] += 0.1
    assert (suffix_table(d) - before).abs().max() > 1e-6
    torch.testing.assert_close(kernels.fused_pair_stage(model, *chunk)[0], reference_pair_stage(model, *chunk)[0],
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("case", "by_type"), [(1, True), (2, False), (3, True), (4, False)])
def test_t_kernel_adds_the_tail_and_writes_d_itself(case, by_type, monkeypatch):
    """The atom-tile T kernel that adds the tail before it stores T and writes D (each type's atoms together in the
    order of their index lists, or every atom at its own row) gives the T of the tail kernel after it and the D of
    `descriptor_matrix`'s kernel."""
    from deeppot.kernels import atom_tiles, descriptor_matrix
    from deeppot.model.energy_model import type_groups

    model, rij, _, center_type, neighbor_type = chunk_of(*CASES[case], seed=6)
    d = model.descriptor
    reach = find_reach(d, center_type, neighbor_type)
    assert (reach.reach < reach.reach.new_tensor(d.sel)).any()  # a tail to add
    type_rows = type_groups(center_type, d.ntypes) if by_type else None
    desc, pos = kernels.desc_rows(model, center_type, not by_type, type_rows)
    assert (pos is None) != by_type
    t_fused = atom_tiles.descriptor_t(d, rij, center_type, "f16x3", reach, desc=(desc, pos))
    monkeypatch.setattr(atom_tiles, "FUSED_TAIL", False)
    t_plain = atom_tiles.descriptor_t(d, rij, center_type, "f16x3", find_reach(d, center_type, neighbor_type))
    torch.testing.assert_close(t_fused, t_plain, **TOL[d.dtype])
    order = torch.cat(type_rows) if by_type else None
    expected = descriptor_matrix.descriptor_from_t(t_plain, d.axis_neuron, model.fitting.dtype, order)
    torch.testing.assert_close(desc, expected, **TOL[d.dtype])
    monkeypatch.setattr(atom_tiles, "FUSED_TAIL", True)  # the tail alone in the kernel
    t_tail = atom_tiles.descriptor_t(d, rij, center_type, "f16x3", find_reach(d, center_type, neighbor_type))
    torch.testing.assert_close(t_tail, t_plain, **TOL[d.dtype])


@pytest.mark.parametrize("exclude", [None, [[0, 1]]])
def test_reach_kernel_equals_its_pytorch_twin(exclude):
    """One pass over the neighbour types gives `find_reach_reference`'s reach and last, with padding shuffled
    inside the blocks and with an excluded type pair (its blocks' reach 0, their last kept)."""
    model, _, _, center_type, neighbor_type = chunk_of(False, "float64", (4, 8, 16), (24, 40), 2, seed=3,
                                                       exclude_types=exclude)
    d = model.descriptor
    gen = torch.Generator().manual_seed(1)
    perm = torch.cat([torch.randperm(24, generator=gen), 24 + torch.randperm(40, generator=gen)]).to(DEVICE)
    for kinds in (neighbor_type, neighbor_type[:, perm]):
        got, ref = find_reach(d, center_type, kinds), find_reach_reference(d, center_type, kinds)
        assert torch.equal(got.reach, ref.reach) and torch.equal(got.last, ref.last)
        assert (ref.last > 0).all() and (ref.last < ref.last.new_tensor(d.sel)).any()
    assert (got.reach == 0).any() == bool(exclude)


@pytest.mark.parametrize("atoms", [1, 3, 4, 8])
@pytest.mark.parametrize("per_type", [0, 3])
def test_tile_tops_kernel_equals_its_pytorch_twin(atoms, per_type):
    """Per tile of `atoms` centres (a ragged last one), kind and block, the most reach: one kernel against the
    PyTorch twin, on reach up to 90 and centres of three types in random order."""
    gen = torch.Generator().manual_seed(atoms)
    reach = torch.randint(0, 91, (37, 3), generator=gen, dtype=torch.int32).to(DEVICE)
    center_type = torch.randint(0, 3, (37,), generator=gen).to(DEVICE)
    got = tile_tops(None, Reach(reach, reach, {}), center_type, atoms, per_type)
    ref = tile_tops_reference(reach, center_type, atoms, per_type)
    assert got.shape == ref.shape == (-(-37 // atoms), max(per_type, 1), 3)
    assert torch.equal(got, ref) and (ref > 0).any()


def test_the_gradient_tile_follows_the_counts():
    """(8, 8) tiles for the f16x3 gradient where their tiles walk fewer slots than GRAD_TILE_GAIN of the default's
    (counts 3 and 9: 24 slots a centre against 32), else the default (counts that fill 16-slot chunks)."""
    from deeppot.kernels import atom_tiles

    d = chunk_of(False, "float32", (4, 8, 16), (24, 24), 2)[0].descriptor
    center_type = torch.zeros(64, dtype=torch.long, device=DEVICE)
    mixed = torch.tensor([[3, 9]], dtype=torch.int32, device=DEVICE).repeat(64, 1)
    full = torch.full((64, 2), 16, dtype=torch.int32, device=DEVICE)
    assert atom_tiles.gradient_tile(d, mixed, center_type, "f16x3", torch.float32) == atom_tiles.GRAD_TILE == (8, 8, 4)
    assert atom_tiles.gradient_tile(d, full, center_type, "f16x3", torch.float32) is None
    assert atom_tiles.gradient_tile(d, mixed, center_type, "tf32x3", torch.float32) is None  # its tiles: TILES'


@pytest.mark.parametrize("tile", [(16, 4, 4), (2, 32, 4)])
def test_fused_stage_with_another_gradient_tile(tile):
    """A gradient tile given to the stage (`grad_tile`, as the Evaluator passes `atom_tiles.gradient_tile`'s) walks
    other tiles and shares the rows made for them: the same energies and dE/dr_ij as the reference stage."""
    model, *chunk = chunk_of(False, "float32", (4, 8, 16), (20, 20, 20), 3, seed=5)
    energy, grad = kernels.fused_pair_stage(model, *chunk, grad_tile=tile)
    energy_ref, grad_ref = reference_pair_stage(model, *chunk)
    torch.testing.assert_close(energy, energy_ref, **TOL[torch.float32])
    scale = grad_ref.abs().max()
    torch.testing.assert_close(grad / scale, grad_ref / scale, **TOL[torch.float32])
