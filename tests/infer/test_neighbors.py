"""The Verlet-skin neighbour list against fresh builds: after moves below skin / 2 (and box changes within the
bound of `needs_rebuild`) `update` selects the same neighbours as `build_neighbor_data` at the new positions, slot by
slot; past the bound it can miss a pair, which `needs_rebuild` flags. `update` makes no host sync.

Lists of two builders index their ghosts differently, so neighbours are compared through owners (`mapping`) and
displacement vectors, per type block, and distances slot by slot (ties may swap two slots' atoms, never the distance).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import EXAMPLE_DATA, make_model
from torch.overrides import TorchFunctionMode

from deeppot.infer.candidates import evaluation_neighbors, select_from_candidates, select_in_candidate_order
from deeppot.infer.evaluate import FlatNeighbors, evaluate_flat, reference_pair_stage
from deeppot.infer.neighbors import SkinNeighborList, spectral_norm_bound
from deeppot.nlist import REFERENCE_MAX_PAIRS, NeighborData, NeighborOverflowWarning, build_neighbor_data, format_nlist
from deeppot.nlist.selection import split_by_type
from deeppot.nlist.testing import check_nlist_layout, sort_rows

SKEWED = [[6.0, 0.0, 0.0], [4.0, 5.5, 0.0], [3.0, -4.0, 6.5]]  # face distances below rcut + skin
TINY = [[2.6, 0.0, 0.0], [0.4, 2.4, 0.0], [0.3, 0.2, 2.5]]  # several image layers in every direction


def water_frames():
    """Two frames of the bundled water example: 192 atoms, cubic 12.44 A box."""
    folder = EXAMPLE_DATA / "data_0"
    coord = torch.tensor(np.load(folder / "set.000" / "coord.npy")[:2], dtype=torch.float64).reshape(2, -1, 3)
    box = torch.tensor(np.load(folder / "set.000" / "box.npy")[:2], dtype=torch.float64).reshape(2, 3, 3)
    atype = torch.tensor(np.loadtxt(folder / "type.raw", dtype=np.int64)).expand(2, -1).clone()
    return coord, atype, box


def random_cell(rows, natoms: int, seed: int, nf: int = 2, scales=(1.0, 1.08)):
    """Random atoms (some outside the cell, to exercise wrapping) in nf frames of a cell scaled per frame."""
    gen = torch.Generator().manual_seed(seed)
    box = torch.stack([torch.tensor(rows, dtype=torch.float64) * scales[f] for f in range(nf)])
    frac = torch.rand(nf, natoms, 3, generator=gen, dtype=torch.float64) * 1.6 - 0.3
    return frac @ box, torch.randint(0, 2, (nf, natoms), generator=gen), box


def make_case(name: str):
    """(coord, atype, box | None, rcut, sel, skin) of a test system, two frames each."""
    if name == "water":  # cubic, real data
        return (*water_frames(), 6.0, [46, 92], 2.0)
    if name == "skewed":  # triclinic, frames with different boxes (and so different numbers of ghosts)
        return (*random_cell(SKEWED, 40, seed=1), 4.0, [80, 80], 1.0)
    if name == "small":  # cell smaller than rcut + skin
        return (*random_cell(TINY, 3, seed=2), 4.0, [60, 60], 1.0)
    if name == "cluster":  # non-periodic
        gen = torch.Generator().manual_seed(3)
        coord = torch.rand(2, 60, 3, generator=gen, dtype=torch.float64) * 12.0
        return coord, torch.randint(0, 2, (2, 60), generator=gen), None, 4.0, [40, 40], 1.0
    raise KeyError(name)


CASES = ["water", "skewed", "small", "cluster"]


def displace(coord: torch.Tensor, max_move: float, seed: int) -> torch.Tensor:
    """coord moved by random vectors shorter than max_move; the first atom of each frame by almost max_move."""
    gen = torch.Generator().manual_seed(seed)
    direction = torch.randn(coord.shape, generator=gen, dtype=coord.dtype)
    direction = direction / torch.linalg.vector_norm(direction, dim=-1, keepdim=True)
    length = torch.rand((*coord.shape[:2], 1), generator=gen, dtype=coord.dtype) * max_move
    length[:, 0] = 0.999 * max_move
    return coord + direction * length


def block_table(data: NeighborData, sel, decimals: int = 6) -> np.ndarray:
    """Rows (frame, centre, type block, owner, displacement rounded to `decimals`) of every listed pair, sorted."""
    block = torch.repeat_interleave(torch.arange(len(sel)), torch.tensor(sel))
    frame, atom, slot = (data.nlist >= 0).nonzero(as_tuple=True)
    j = data.nlist[frame, atom, slot]
    disp = torch.round((data.ext_coord[frame, j] - data.ext_coord[frame, atom]).detach() * 10**decimals).long()
    index = torch.stack([frame, atom, block[slot], data.mapping[frame, j]], dim=1)
    return sort_rows(torch.cat([index, disp], dim=1).numpy())


def slot_distances(data: NeighborData) -> torch.Tensor:
    """(nf, nloc, nnei) distance of each slot's neighbour, 0 for empty slots."""
    nf, nloc, nnei = data.nlist.shape
    j = data.nlist.clamp(min=0).reshape(nf, -1, 1).expand(-1, -1, 3)
    nbr = torch.gather(data.ext_coord.detach(), 1, j).reshape(nf, nloc, nnei, 3)
    rr = torch.linalg.vector_norm(nbr - data.ext_coord[:, :nloc, None].detach(), dim=-1)
    return rr.masked_fill(data.nlist < 0, 0.0)


def assert_same_neighbors(actual: NeighborData, desired: NeighborData, rcut: float, sel) -> None:
    """Same neighbours slot by slot: the same slots filled, the same distance in each slot, and in every type block
    the same (owner, displacement) pairs."""
    check_nlist_layout(actual.ext_coord, actual.ext_atype, actual.nlist, rcut, sel)
    assert actual.nlist.shape == desired.nlist.shape
    assert torch.equal(actual.nlist >= 0, desired.nlist >= 0), "different numbers of neighbours in some block"
    torch.testing.assert_close(slot_distances(actual), slot_distances(desired), atol=1e-9, rtol=0)
    got, want = block_table(actual, sel), block_table(desired, sel)
    assert len(want) > 0
    np.testing.assert_array_equal(got[:, :4], want[:, :4])
    np.testing.assert_allclose(got[:, 4:], want[:, 4:], atol=2, rtol=0)


def fresh(coord, atype, box, rcut, sel) -> NeighborData:
    return build_neighbor_data(coord, atype, box, rcut, sel, method="cell")


@pytest.mark.parametrize("name", CASES)
def test_build_matches_fresh_build(name):
    coord, atype, box, rcut, sel, skin = make_case(name)
    data = SkinNeighborList(rcut, sel, skin).build(coord, atype, box)
    assert_same_neighbors(data, fresh(coord, atype, box, rcut, sel), rcut, sel)
    assert torch.equal(data.mapping[:, :coord.shape[1]], torch.arange(coord.shape[1]).expand(coord.shape[:2]))


@pytest.mark.parametrize("name", CASES)
def test_update_below_half_skin_matches_fresh_build(name):
    """Three MD-like steps, each at most skin / 2 from the build (one atom per frame at almost skin / 2)."""
    coord, atype, box, rcut, sel, skin = make_case(name)
    nl = SkinNeighborList(rcut, sel, skin)
    nl.build(coord, atype, box)
    for step in range(3):
        moved = displace(coord, skin / 2, seed=10 + step)
        assert not nl.needs_rebuild(moved, box)
        assert_same_neighbors(nl.update(moved), fresh(moved, atype, box, rcut, sel), rcut, sel)
    assert nl.builds == 1


@pytest.mark.parametrize("name", ["water", "cluster"])
def test_needs_rebuild_at_half_skin(name):
    coord, atype, box, rcut, sel, skin = make_case(name)
    nl = SkinNeighborList(rcut, sel, skin)
    nl.build(coord, atype, box)
    assert not nl.needs_rebuild(coord, box)
    for move, expected in [(0.499, False), (0.501, True)]:
        moved = coord.clone()
        moved[1, 17] += torch.tensor([0.6, -0.0, 0.8], dtype=coord.dtype) * move * skin  # a unit vector
        flag = nl.needs_rebuild(moved, box)
        assert flag.dtype == torch.bool and flag.ndim == 0 and bool(flag) is expected


def dimer(distance: float, box_len: float = 20.0):
    """Two atoms facing each other across the x face of a cubic cell, `distance` apart through the boundary."""
    coord = torch.tensor([[[0.3, 5.0, 5.0], [box_len + 0.3 - distance, 5.0, 5.0]]], dtype=torch.float64)
    return coord, torch.tensor([[0, 1]]), torch.eye(3, dtype=torch.float64)[None] * box_len


def approach(coord: torch.Tensor, move: float) -> torch.Tensor:
    """Each atom of `dimer` moved by `move` towards the other's image (the first leaves the cell: unwrapped)."""
    return coord + torch.tensor([[[-move, 0.0, 0.0], [move, 0.0, 0.0]]], dtype=coord.dtype)


def test_pair_from_the_edge_of_the_skin_is_found():
    """Worst case allowed: a pair at rcut + skin moving together by skin / 2 each ends inside rcut, and is found."""
    rcut, skin, sel = 4.0, 1.0, [4, 4]
    coord, atype, box = dimer(rcut + skin - 0.01)
    nl = SkinNeighborList(rcut, sel, skin)
    assert (nl.build(coord, atype, box).nlist >= 0).sum() == 0
    moved = approach(coord, 0.499 * skin)  # now rcut - 0.008 apart
    assert not nl.needs_rebuild(moved, box)
    data = nl.update(moved)
    assert (data.nlist >= 0).sum() == 2
    assert_same_neighbors(data, fresh(moved, atype, box, rcut, sel), rcut, sel)


def test_moves_past_half_skin_need_the_rebuild():
    """A pair just beyond rcut + skin moving together by a little more than skin / 2 each comes within rcut: not a
    candidate, so `update` misses it (the list is wrong); `needs_rebuild` says so and `neighbors` rebuilds."""
    rcut, skin, sel = 4.0, 1.0, [4, 4]
    coord, atype, box = dimer(rcut + skin + 0.01)
    nl = SkinNeighborList(rcut, sel, skin)
    nl.build(coord, atype, box)
    moved = approach(coord, 0.52 * skin)  # now rcut - 0.03 apart
    expected = fresh(moved, atype, box, rcut, sel)
    assert (expected.nlist >= 0).sum() == 2
    assert (nl.update(moved).nlist >= 0).sum() == 0  # stale candidates: the pair is missing
    assert nl.needs_rebuild(moved, box)
    assert_same_neighbors(nl.neighbors(moved, atype, box), expected, rcut, sel)
    assert nl.builds == 2


@pytest.mark.parametrize(("distance", "strain", "rebuild", "pairs"), [
    (4.99, 0.199, False, 2),  # from the edge of the skin into rcut by a compression just within the bound: found
    (5.01, 0.21, True, 0),  # from beyond the skin into rcut by a compression past the bound: missed, flagged
])
def test_compression_of_the_box_is_bounded(distance, strain, rebuild, pairs):
    """Atoms that follow the box exactly (no motion of their own) still come closer: the strain term matters."""
    rcut, skin, sel = 4.0, 1.0, [4, 4]
    coord, atype, box = dimer(distance)
    nl = SkinNeighborList(rcut, sel, skin)
    nl.build(coord, atype, box)
    deform = torch.diag(torch.tensor([1 - strain, 1.0, 1.0], dtype=torch.float64))
    moved, new_box = coord @ deform, box @ deform
    expected = fresh(moved, atype, new_box, rcut, sel)
    assert (expected.nlist >= 0).sum() == 2
    assert bool(nl.needs_rebuild(moved, new_box)) is rebuild
    assert (nl.update(moved, new_box).nlist >= 0).sum() == pairs


def test_spectral_norm_bound():
    mats = torch.randn(200, 3, 3, generator=torch.Generator().manual_seed(12), dtype=torch.float64)
    bound = spectral_norm_bound(mats)
    assert (bound >= torch.linalg.matrix_norm(mats, ord=2) * (1 - 1e-12)).all()
    diag = torch.diag(torch.tensor([0.1, -0.3, 0.2], dtype=torch.float64))
    torch.testing.assert_close(spectral_norm_bound(diag), torch.tensor(0.3, dtype=torch.float64))


@pytest.mark.parametrize("name", ["water", "skewed", "small"])
def test_box_change_within_bound_matches_fresh_build(name):
    """NPT-like steps: the cell deformed (stretch and shear), atoms moved with it plus thermal moves."""
    coord, atype, box, rcut, sel, skin = make_case(name)
    nl = SkinNeighborList(rcut, sel, skin)
    nl.build(coord, atype, box)
    strain = torch.tensor([[1.004, 0.002, 0.0], [0.0, 0.997, -0.001], [0.001, 0.0, 1.002]], dtype=torch.float64)
    new_box = box @ strain  # rows: each lattice vector deformed
    moved = displace(coord @ strain, 0.3 * skin, seed=4)
    assert not nl.needs_rebuild(moved, new_box)
    assert_same_neighbors(nl.update(moved, new_box), fresh(moved, atype, new_box, rcut, sel), rcut, sel)
    squeeze = 0.98 * rcut / (rcut + skin)  # brings pairs from beyond rcut + skin within rcut
    assert nl.needs_rebuild(coord * squeeze, box * squeeze)
    assert not nl.needs_rebuild(coord * 1.1, box * 1.1)  # an expansion brings no pair closer


def test_rebuild_criterion_is_safe_for_random_box_changes():
    """Random strains and moves, atoms not following the box: whenever needs_rebuild is false, update is exact."""
    coord, atype, box, rcut, sel, skin = make_case("skewed")
    nl = SkinNeighborList(rcut, sel, skin)
    nl.build(coord, atype, box)
    gen = torch.Generator().manual_seed(5)
    outcomes = set()
    for trial in range(12):
        size = 0.04 * torch.rand((), generator=gen, dtype=torch.float64)
        new_box = box + size * torch.randn(box.shape, generator=gen, dtype=torch.float64) * box.abs().amax()
        moved = displace(coord, float(0.5 * skin * torch.rand((), generator=gen)), seed=100 + trial)
        rebuild = bool(nl.needs_rebuild(moved, new_box))
        outcomes.add(rebuild)
        if not rebuild:
            assert_same_neighbors(nl.update(moved, new_box), fresh(moved, atype, new_box, rcut, sel), rcut, sel)
    assert outcomes == {False, True}


def test_selection_equals_format_nlist():
    """select_from_candidates is format_nlist's rule, also when a type overflows its sel."""
    coord, atype, box, rcut, _, skin = make_case("skewed")
    nl = SkinNeighborList(rcut, [80, 80], skin)
    data = nl.build(coord, atype, box)
    ref = nl.ref
    for sel in ([80, 80], [10, 30]):
        expected = format_nlist(data.ext_coord, data.ext_atype, ref.candidates, coord.shape[1], rcut, sel,
                                check_overflow=False)
        actual = select_from_candidates(data.ext_coord, data.ext_atype, ref.candidates, ref.cand_type, rcut, sel)
        assert torch.equal(actual, expected)
    with pytest.warns(NeighborOverflowWarning):
        select_from_candidates(data.ext_coord, data.ext_atype, ref.candidates, ref.cand_type, rcut, [10, 30],
                               check_overflow=True)


@pytest.mark.parametrize("name", CASES)
def test_unsorted_update_lists_the_same_neighbours(name):
    """sort=False: each type block holds the same neighbours as DeePMD's list (in another order), no overflow."""
    coord, atype, box, rcut, sel, skin = make_case(name)
    nl = SkinNeighborList(rcut, sel, skin, sort=False)
    nl.build(coord, atype, box)
    for step in range(2):
        moved = displace(coord, skin / 2, seed=20 + step)
        data = nl.update(moved)
        desired = fresh(moved, atype, box, rcut, sel)
        assert torch.equal((data.nlist >= 0).sum(-1), (desired.nlist >= 0).sum(-1))
        got, want = block_table(data, sel), block_table(desired, sel)
        np.testing.assert_array_equal(got[:, :4], want[:, :4])
        np.testing.assert_allclose(got[:, 4:], want[:, 4:], atol=2, rtol=0)
    assert not bool(nl.overflow)


def test_unsorted_selection_flags_overflow():
    """Rows with more neighbours of a type than sel set the flag, and the next build warns; without, no flag."""
    coord, atype, box, rcut, _, skin = make_case("skewed")
    nl = SkinNeighborList(rcut, [80, 80], skin)
    data = nl.build(coord, atype, box)
    ref = nl.ref
    args = (data.ext_coord, data.ext_atype, ref.candidates, ref.cand_type, rcut)
    nlist, over = select_in_candidate_order(*args, [80, 80])
    assert not bool(over)
    nlist, over = select_in_candidate_order(*args, [10, 30])
    assert bool(over) and ((nlist >= 0).sum(-1) <= 40).all()
    small = SkinNeighborList(rcut, [10, 30], skin, sort=False)
    with pytest.warns(NeighborOverflowWarning):
        small.build(coord, atype, box, check_overflow=True)


def test_unsorted_update_gives_the_same_energy_and_forces():
    model = make_model(rcut=4.0, sel=(80, 80))
    coord, atype, box, rcut, sel, skin = make_case("skewed")
    lists = [SkinNeighborList(rcut, sel, skin, sort=sort) for sort in (True, False)]
    moved = displace(coord, skin / 2, seed=9)
    out = []
    for nl in lists:
        nl.build(coord, atype, box)
        data = nl.update(moved, box * 1.002)
        out.append(model.forward_lower(data.ext_coord, data.ext_atype, data.nlist, data.mapping))
    assert not torch.equal(lists[0].update(moved).nlist, lists[1].update(moved).nlist)  # really another order
    for key in ("energy", "force", "virial"):
        torch.testing.assert_close(out[1][key], out[0][key], rtol=1e-12, atol=1e-12)


@pytest.mark.filterwarnings("ignore::deeppot.nlist.NeighborOverflowWarning")  # the big moves crowd some atoms
@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("sort", [True, False])
def test_static_buffers_give_the_same_list_and_survive_builds(name, sort):
    """static=True: the same list as without (padding rows and columns appended), builds refill the same tensors
    while they fit (a graph that read them stays valid), and a build that outgrows them allocates anew."""
    coord, atype, box, rcut, sel, skin = make_case(name)
    plain, static = SkinNeighborList(rcut, sel, skin, sort=sort), SkinNeighborList(rcut, sel, skin, sort=sort,
                                                                                    static=True)
    for nl in (plain, static):
        nl.build(coord, atype, box)
    tensors = [id(t) for t in vars(static.ref).values() if isinstance(t, torch.Tensor)]
    for step in range(3):
        moved = displace(coord, 0.9 * skin, seed=30 + step)  # far enough to need the builds below
        for nl in (plain, static):
            nl.build(moved, atype, box)
        moved = displace(moved, skin / 2, seed=40 + step)
        want, got = plain.update(moved, box), static.update(moved, box)
        nall = want.ext_coord.shape[1]
        assert torch.equal(got.nlist, want.nlist)
        assert torch.equal(got.ext_coord[:, :nall], want.ext_coord) and torch.equal(got.mapping[:, :nall],
                                                                                       want.mapping)
        assert (got.ext_atype[:, nall:] == -1).all()
        torch.testing.assert_close(static.skin_used(moved, box), plain.skin_used(moved, box), rtol=0, atol=0)
    assert static.generation == 1 and plain.generation == 4
    assert [id(t) for t in vars(static.ref).values() if isinstance(t, torch.Tensor)] == tensors
    static.build(torch.cat([coord, coord + 0.5], dim=1), torch.cat([atype, atype], dim=1), box)  # twice the atoms
    assert static.generation == 2


@pytest.mark.parametrize(("k", "sel"), [(12, [3, 4, 2]), (5, [3, 4, 2]), (30, [1, 0, 6]), (0, [2, 3])])
def test_split_by_type_against_a_loop(k, sel):
    """Slot s of block t holds the s-th type-t entry, by a plain loop over each row; dropped entries (-1) and types
    beyond their sel (then the overflow flag is set)."""
    gen = torch.Generator().manual_seed(k)
    idx = torch.randint(0, 1000, (4, 7, k), generator=gen)
    itype = torch.randint(-1, len(sel), (4, 7, k), generator=gen)
    want = torch.full((4, 7, sum(sel)), -1, dtype=torch.int64)
    over = False
    for f, i in np.ndindex(4, 7):
        for t, start in enumerate(np.cumsum([0, *sel[:-1]])):
            entries = idx[f, i][itype[f, i] == t]
            want[f, i, start:start + min(len(entries), sel[t])] = entries[:sel[t]]
            over |= len(entries) > sel[t]
    got, got_over = split_by_type(idx, itype, sel, overflow=True)
    assert torch.equal(got, want) and torch.equal(split_by_type(idx, itype, sel), want)
    assert bool(got_over) == over
    assert over or k < 30  # the widest rows overflow


@pytest.mark.parametrize("name", CASES)
def test_candidates_are_every_atom_within_rcut_plus_skin(name):
    """No width to outgrow: each row holds every atom within rcut + skin (those of a fresh list at that radius with
    room for all), in ascending index order with the padding last."""
    coord, atype, box, rcut, sel, skin = make_case(name)
    nl = SkinNeighborList(rcut, sel, skin)
    ext_coord = nl.build(coord, atype, box).ext_coord
    cand = nl.ref.candidates
    real = cand >= 0
    assert torch.equal(real, real.sort(dim=-1, descending=True).values)
    assert (cand.diff(dim=-1) > 0)[real[..., 1:]].all()
    rows = NeighborData(ext_coord, nl.ref.ext_atype, nl.ref.mapping, cand)
    wide = fresh(coord, atype, box, rcut + skin, [600] * len(sel))
    assert (wide.nlist >= 0).sum(-1).max() < 600
    got, want = block_table(rows, [cand.shape[-1]]), block_table(wide, [wide.nlist.shape[-1]])
    np.testing.assert_array_equal(got[:, :4], want[:, :4])
    np.testing.assert_allclose(got[:, 4:], want[:, 4:], atol=2, rtol=0)  # displacements in 1e-6 Å, rounded


def test_virtual_atoms_get_no_neighbours():
    coord, atype, box, rcut, sel, skin = make_case("skewed")
    atype = atype.clone()
    atype[:, [0, 7]] = -1
    nl = SkinNeighborList(rcut, sel, skin)
    nl.build(coord, atype, box)
    moved = displace(coord, skin / 2, seed=7)
    data = nl.update(moved)
    assert (data.nlist[:, [0, 7]] == -1).all()
    assert_same_neighbors(data, fresh(moved, atype, box, rcut, sel), rcut, sel)


def test_energy_and_forces_equal_those_of_a_fresh_build():
    """The model sees the same environment: energy, forces and virial through update equal a fresh build's."""
    model = make_model(rcut=4.0, sel=(80, 80))
    coord, atype, box, rcut, sel, skin = make_case("skewed")
    nl = SkinNeighborList(rcut, sel, skin)
    nl.build(coord, atype, box)
    moved = displace(coord, skin / 2, seed=8)
    new_box = box * 1.003
    out = {}
    for name, data in [("skin", nl.update(moved, new_box)), ("fresh", fresh(moved, atype, new_box, rcut, sel))]:
        out[name] = model.forward_lower(data.ext_coord, data.ext_atype, data.nlist, data.mapping)
    for key in ("energy", "force", "virial"):
        torch.testing.assert_close(out["skin"][key], out["fresh"][key], rtol=1e-10, atol=1e-10)


def test_ext_coord_differentiable_in_coord_and_box():
    coord, atype, box, rcut, sel, skin = make_case("small")
    nl = SkinNeighborList(rcut, sel, skin)
    nl.build(coord, atype, box)
    coord, box = coord.clone().requires_grad_(True), box.clone().requires_grad_(True)
    data = nl.update(coord, box)
    data.ext_coord.sum().backward()
    images = torch.stack([torch.bincount(m[t >= 0], minlength=coord.shape[1])  # padding atoms stay put
                          for m, t in zip(data.mapping, data.ext_atype, strict=True)]).to(coord.dtype)
    torch.testing.assert_close(coord.grad, images[..., None].expand(-1, -1, 3))
    assert box.grad is not None and box.grad.abs().sum() > 0


def test_errors():
    coord, atype, box, rcut, sel, skin = make_case("skewed")
    nl = SkinNeighborList(rcut, sel, skin)
    with pytest.raises(RuntimeError, match="build"):
        nl.update(coord)
    nl.build(coord, atype, None)
    with pytest.raises(ValueError, match="non-periodic"):
        nl.update(coord, box)
    with pytest.raises(ValueError, match="does not match"):
        nl.update(coord[:, :5])
    with pytest.raises(ValueError, match="skin"):
        SkinNeighborList(rcut, sel, -1.0)


# Calls that read device data on the host (or copy host data to the device, which synchronises on a GPU).
HOST_SYNCS = {"__bool__", "__int__", "__float__", "__index__", "item", "tolist", "cpu", "numpy", "nonzero",
              "argwhere", "masked_select", "unique", "unique_consecutive", "bincount", "tensor", "as_tensor",
              "linalg_inv", "inv", "linalg_solve", "linalg_det"}


class HostSyncRecorder(TorchFunctionMode):
    """Records every torch call that synchronises with the host, including indexing with a boolean mask and
    repeat_interleave without output_size."""

    def __init__(self):
        super().__init__()
        self.syncs: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", str(func))
        index = args[1] if name in ("__getitem__", "__setitem__", "index_put_", "index_put") else ()
        masks = [i for i in (index if isinstance(index, tuple | list) else (index,))
                 if isinstance(i, torch.Tensor) and i.dtype == torch.bool]
        if name in HOST_SYNCS or masks or (name == "repeat_interleave" and "output_size" not in kwargs):
            self.syncs.append(name)
        return func(*args, **kwargs)


@pytest.mark.parametrize("name", ["skewed", "cluster"])
def test_update_and_needs_rebuild_make_no_host_sync(name):
    coord, atype, box, rcut, sel, skin = make_case(name)
    nl = SkinNeighborList(rcut, sel, skin)
    nl.build(coord, atype, box)
    moved = displace(coord, skin / 2, seed=9)
    new_box = None if box is None else box * 1.001
    with HostSyncRecorder() as recorder:
        nl.update(moved, new_box)
        nl.needs_rebuild(moved, new_box)
        nl.update(moved)
    assert recorder.syncs == []
    with HostSyncRecorder() as recorder:  # the recorder sees syncs: the optional overflow check is one
        nl.update(moved, check_overflow=True)
    assert recorder.syncs


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", ["water", "skewed"])
def test_cuda_update_is_sync_free_and_graph_capturable(name):
    coord, atype, box, rcut, sel, skin = (x.cuda() if isinstance(x, torch.Tensor) else x for x in make_case(name))
    nl = SkinNeighborList(rcut, sel, skin)
    nl.build(coord, atype, box)
    static_coord, static_box = coord.clone(), box.clone()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        eager = nl.update(static_coord, static_box)
        flag = nl.needs_rebuild(static_coord, static_box)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert not flag
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        nl.update(static_coord, static_box)  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = nl.update(static_coord, static_box)
        out_flag = nl.needs_rebuild(static_coord, static_box)
    moved = displace(coord.cpu(), skin / 2, seed=11).cuda()
    static_coord.copy_(moved)
    graph.replay()
    assert not out_flag
    expected = fresh(moved, atype, box, rcut, sel)
    graphed = NeighborData(out.ext_coord.clone(), out.ext_atype, out.mapping, out.nlist.clone())
    assert_same_neighbors(to_cpu(graphed), to_cpu(expected), rcut, sel)
    assert eager.nlist.shape == out.nlist.shape
    static_coord[0, 3, 0] += 0.6 * skin  # past the bound: the captured flag turns on at the next replay
    graph.replay()
    assert out_flag


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_unsorted_update_is_sync_free():
    """sort=False on CUDA (the selection kernel of deeppot.kernels.selection): no host sync, DeePMD's neighbours."""
    coord, atype, box, rcut, sel, skin = (x.cuda() if isinstance(x, torch.Tensor) else x for x in make_case("water"))
    nl = SkinNeighborList(rcut, sel, skin, sort=False)
    nl.build(coord, atype, box)
    moved = displace(coord.cpu(), skin / 2, seed=12).cuda()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        data = nl.update(moved, box)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    got, want = block_table(to_cpu(data), sel), block_table(to_cpu(fresh(moved, atype, box, rcut, sel)), sel)
    np.testing.assert_array_equal(got[:, :4], want[:, :4])
    assert not bool(nl.overflow)


def to_cpu(data: NeighborData) -> NeighborData:
    return NeighborData(*(t.cpu() for t in (data.ext_coord, data.ext_atype, data.mapping, data.nlist)))


@pytest.mark.parametrize("name", CASES)
def test_evaluation_neighbors_are_deepmds_in_candidate_order(name, monkeypatch):
    """A one-off evaluation's list from the cell list (every case, forced: small systems take the reference): the
    cell list's extended atoms, and in every type block DeePMD's neighbours, in the order the bins hold them;
    virtual centres get none."""
    monkeypatch.setitem(REFERENCE_MAX_PAIRS, "cpu", 0)
    coord, atype, box, rcut, sel, _ = make_case(name)
    atype = atype.clone()
    atype[0, 1] = -1
    got, want = evaluation_neighbors(coord, atype, box, rcut, sel), fresh(coord, atype, box, rcut, sel)
    for a, b in zip((got.ext_coord, got.ext_atype, got.mapping), (want.ext_coord, want.ext_atype, want.mapping),
                    strict=True):
        assert torch.equal(a, b)
    assert torch.equal((got.nlist >= 0).sum(-1), (want.nlist >= 0).sum(-1))
    got_table, want_table = block_table(got, sel), block_table(want, sel)
    assert len(want_table) > 0
    np.testing.assert_array_equal(got_table, want_table)
    assert (got.nlist[0, 1] == -1).all()


@pytest.mark.parametrize("name", ["small", "cluster", "skewed"])
def test_evaluation_neighbors_of_small_systems_are_the_references_in_index_order(name, monkeypatch):
    """Small systems (the O(N^2) builder's size; forced for the skewed cell): the reference's extended atoms, and
    in every type block its neighbours in ascending extended index instead of distance; virtual centres get none."""
    monkeypatch.setitem(REFERENCE_MAX_PAIRS, "cpu", 10**7)
    coord, atype, box, rcut, sel, _ = make_case(name)
    atype = atype.clone()
    atype[1, 2] = -1
    got = evaluation_neighbors(coord, atype, box, rcut, sel)
    want = build_neighbor_data(coord, atype, box, rcut, sel, method="reference")
    for a, b in zip((got.ext_coord, got.mapping), (want.ext_coord, want.mapping), strict=True):
        assert torch.equal(a, b)
    start = 0
    for width in sel:
        block, ref = got.nlist[..., start:start + width], want.nlist[..., start:start + width]
        ascending = torch.where(ref >= 0, ref, torch.iinfo(torch.int64).max).sort(-1).values
        assert torch.equal(block, ascending.masked_fill(ascending == torch.iinfo(torch.int64).max, -1))
        start += width
    assert (want.nlist >= 0).sum() > 0 and (got.nlist[1, 2] == -1).all()


BUILDERS = {"cell": 0, "reference": 10**8}  # REFERENCE_MAX_PAIRS["cpu"] that makes evaluation_neighbors use each


@pytest.mark.parametrize("method", BUILDERS)
def test_evaluation_neighbors_take_deepmds_list_when_a_type_overflows(method, monkeypatch):
    """More neighbours of a type than sel: the nearest are kept (DeePMD's list, sorted), with the warning."""
    monkeypatch.setitem(REFERENCE_MAX_PAIRS, "cpu", BUILDERS[method])
    coord, atype, box, rcut, _, _ = make_case("water")
    with pytest.warns(NeighborOverflowWarning):
        got = evaluation_neighbors(coord, atype, box, rcut, [20, 40])
    with pytest.warns(NeighborOverflowWarning):
        want = build_neighbor_data(coord, atype, box, rcut, [20, 40], method=method)
    assert torch.equal(got.nlist, want.nlist)


@pytest.mark.parametrize("method", BUILDERS)
def test_evaluation_neighbors_give_the_energies_of_deepmds_list(method, monkeypatch):
    monkeypatch.setitem(REFERENCE_MAX_PAIRS, "cpu", BUILDERS[method])
    model = make_model(rcut=4.0, sel=(80, 80))
    coord, atype, box, rcut, sel, _ = make_case("skewed")
    lists = (evaluation_neighbors(coord, atype, box, rcut, sel),
             build_neighbor_data(coord, atype, box, rcut, sel, method=method))
    assert not torch.equal(lists[0].nlist, lists[1].nlist)  # really another order
    out = []
    for nd in lists:
        flat = FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping)
        out.append(evaluate_flat(model, flat, 17, reference_pair_stage))
    for key in ("energy", "force", "virial"):
        torch.testing.assert_close(out[0][key], out[1][key], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("per_slot", [False, True])
def test_models_with_statistics_per_slot_get_deepmds_list(per_slot, monkeypatch):
    """A model whose davg/dstd differ slot by slot (DeePMD-kit's format allows it) needs DeePMD's slot order: the
    evaluator and an MD run's list then sort; the energies are those of the sorted list either way."""
    from deeppot.infer import Evaluator
    from deeppot.md.potential import DeepPotential

    monkeypatch.setitem(REFERENCE_MAX_PAIRS, "cpu", 0)
    model = make_model(rcut=4.0, sel=(80, 80))
    if per_slot:
        with torch.no_grad():
            model.descriptor.davg.add_(0.05 * torch.rand_like(model.descriptor.davg))
    coord, atype, box, rcut, sel, _ = make_case("skewed")
    ev = Evaluator(model, "cpu")
    got = ev.neighbors(coord, atype, box)
    nd = fresh(coord, atype, box, rcut, sel)
    assert ev.sorted_lists == per_slot and torch.equal(got.nlist, FlatNeighbors.from_frames(
        nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping).nlist) == per_slot
    out = ev.evaluate(coord, atype, box)
    want = evaluate_flat(model, FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping), 17,
                         reference_pair_stage)
    for key in ("energy", "force", "virial"):
        torch.testing.assert_close(out[key], want[key], rtol=1e-12, atol=1e-12)
    assert DeepPotential([model], atype[0], 1.0, "cpu").nlist.sort == per_slot
