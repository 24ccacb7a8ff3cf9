"""More neighbours of a type than its sel: one NeighborOverflowWarning naming frame, atom, type and excess; the
kept neighbours are the nearest (spec §3.2)."""

from __future__ import annotations

import re
import warnings

import pytest
import torch

from deeppot.nlist import NeighborOverflowWarning, build_neighbor_data
from deeppot.nlist.testing import assert_same_pairs, check_nlist_layout, pair_table

RCUT = 6.0
CASE = re.compile(r"frame (\d+) atom (\d+): (\d+) neighbours of type (\d+) within rcut 6.0 but sel\[(\d+)\] = "
                  r"(\d+) \((\d+) dropped\)")


def neighbour_distances(data):
    """Distances of the listed neighbours, inf for -1: (nf, nloc, nnei)."""
    nf, nloc, nnei = data.nlist.shape
    j = data.nlist.clamp(min=0).reshape(nf, -1, 1).expand(-1, -1, 3)
    rr = torch.linalg.norm(torch.gather(data.ext_coord, 1, j).reshape(nf, nloc, nnei, 3)
                           - data.ext_coord[:, :nloc, None], dim=-1)
    return rr.masked_fill(data.nlist < 0, float("inf"))


@pytest.mark.parametrize("method", ["reference", "cell"])
def test_overflow_warns_and_keeps_nearest(system_factory, method):
    coord, atype, box, _ = system_factory("copper")  # ~78 neighbours per atom within 6 A
    full = build_neighbor_data(coord, atype, box, RCUT, [120], method=method)
    true_count = (full.nlist >= 0).sum(-1)  # (nf, nloc)
    with pytest.warns(NeighborOverflowWarning) as record:
        small = build_neighbor_data(coord, atype, box, RCUT, [40], method=method)
    assert len(record) == 1
    cases = CASE.findall(str(record[0].message))
    assert 1 <= len(cases) <= 5
    assert re.search(rf"overflow in {coord.shape[0] * coord.shape[1]} ", str(record[0].message))  # every atom
    for frame, atom, n, t, t2, width, dropped in (tuple(map(int, c)) for c in cases):
        assert (t, t2, width) == (0, 0, 40)
        assert n == true_count[frame, atom] and dropped == n - 40
    assert int(cases[0][2]) == true_count.max()  # the worst case comes first
    check_nlist_layout(small.ext_coord, small.ext_atype, small.nlist, RCUT, [40])
    assert (small.nlist >= 0).all()
    torch.testing.assert_close(neighbour_distances(small), neighbour_distances(full)[..., :40])


def type_counts(data, sel):
    """Listed neighbours of each type: (nf, nloc, ntypes), from a list wide enough to hold them all."""
    return torch.stack([(data.nlist[..., sum(sel[:t]) : sum(sel[: t + 1])] >= 0).sum(-1)
                        for t in range(len(sel))], dim=-1)


@pytest.mark.parametrize("method", ["reference", "cell"])
def test_overflow_message_names_atom_type_and_excess(system_factory, method):
    """Random atoms: counts differ from atom to atom, so the named (frame, atom, type) must be the right one."""
    coord, atype, box, wide = system_factory("skewed")
    true = type_counts(build_neighbor_data(coord, atype, box, RCUT, wide, method="reference"), wide)
    sel = [60, 60]
    assert (true.amax(dim=(0, 1)) > torch.tensor(sel)).all()
    with pytest.warns(NeighborOverflowWarning) as record:
        build_neighbor_data(coord, atype, box, RCUT, sel, method=method)
    cases = [tuple(map(int, c)) for c in CASE.findall(str(record[0].message))]
    assert len(cases) == 5
    excess = (true - torch.tensor(sel)).clamp(min=0)
    assert f"overflow in {int((excess > 0).sum())} " in str(record[0].message)
    for frame, atom, n, t, t2, width, dropped in cases:
        assert t == t2 and width == sel[t]
        assert n == true[frame, atom, t] and dropped == n - sel[t]
    assert [c[6] for c in cases] == sorted(excess.flatten().tolist(), reverse=True)[:5]


def test_overflow_of_one_type_in_both_builders(system_factory):
    """sel [30, 20] truncates both types (PT rule: the nearest 50 of any type first): same result in both."""
    coord, atype, box, _ = system_factory("skewed")
    sel = [30, 20]
    with pytest.warns(NeighborOverflowWarning, match=r"type \d within rcut 6.0 but sel\[\d\] = (30|20)"):
        ref = build_neighbor_data(coord, atype, box, RCUT, sel, method="reference")
    with pytest.warns(NeighborOverflowWarning):
        cell = build_neighbor_data(coord, atype, box, RCUT, sel, method="cell")
    check_nlist_layout(cell.ext_coord, cell.ext_atype, cell.nlist, RCUT, sel)
    assert_same_pairs(pair_table(cell.ext_coord, cell.mapping, cell.nlist),
                      pair_table(ref.ext_coord, ref.mapping, ref.nlist))


@pytest.mark.parametrize("method", ["reference", "cell"])
def test_no_warning_when_sel_suffices(system_factory, method):
    coord, atype, box, sel = system_factory("water")
    with warnings.catch_warnings():
        warnings.simplefilter("error", NeighborOverflowWarning)
        build_neighbor_data(coord, atype, box, RCUT, sel, method=method)


def test_check_overflow_false_is_silent(system_factory):
    coord, atype, box, _ = system_factory("skewed")
    with warnings.catch_warnings():
        warnings.simplefilter("error", NeighborOverflowWarning)
        build_neighbor_data(coord, atype, box, RCUT, [10, 10], method="cell", check_overflow=False)
