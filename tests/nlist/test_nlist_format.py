"""format_nlist: an MD engine's list (unsorted, -1 padded, wider, radius rcut + skin) -> the builders' layout."""

from __future__ import annotations

import warnings

import pytest
import torch

from deeppot.nlist import NeighborOverflowWarning, format_nlist
from deeppot.nlist.ghosts import extend_coords
from deeppot.nlist.reference import build_nlist_reference

RCUT = 6.0


def engine_list(ext_coord, nloc, radius, extra, seed):
    """A LAMMPS-like raw list: every atom within `radius` of each centre, plus `extra` columns of farther atoms
    and of -1, each row shuffled: (nf, nloc, width) with width > sum(sel)."""
    gen = torch.Generator().manual_seed(seed)
    rr = torch.cdist(ext_coord[:, :nloc], ext_coord)
    rr[:, torch.arange(nloc), torch.arange(nloc)] = float("inf")
    near = rr <= radius
    # Random keys: atoms within radius first (keys < 1), then all others (keys in [1, 2)), each group shuffled.
    key = torch.rand(rr.shape, generator=gen, dtype=rr.dtype) + (~near).to(rr.dtype)
    width = int(near.sum(-1).max()) + extra
    raw = torch.argsort(key, dim=-1)[..., :width]
    pad = torch.rand(raw.shape, generator=gen) < 0.1
    far = torch.gather(~near, -1, raw)
    raw = torch.where(pad & far, -1, raw)  # some padding among the far entries
    order = torch.argsort(torch.rand(raw.shape, generator=gen), dim=-1)
    return torch.gather(raw, -1, order)


def test_format_engine_list_equals_reference(system_factory):
    coord, atype, box, sel = system_factory("skewed")
    ext_coord, ext_atype, _ = extend_coords(coord, atype, box, RCUT)
    nloc = coord.shape[1]
    expect = build_nlist_reference(ext_coord, ext_atype, nloc, RCUT, sel)
    raw = engine_list(ext_coord, nloc, RCUT + 2.0, extra=30, seed=11)
    assert raw.shape[-1] > sum(sel) and (raw == -1).any()
    assert torch.equal(format_nlist(ext_coord, ext_atype, raw, nloc, RCUT, sel), expect)


def test_format_narrow_list_is_padded(system_factory):
    coord, atype, box, sel = system_factory("water")
    ext_coord, ext_atype, _ = extend_coords(coord[:1], atype[:1], box[:1], RCUT)
    nloc = coord.shape[1]
    expect = build_nlist_reference(ext_coord, ext_atype, nloc, RCUT, sel)
    # Only the type-1 block, reversed: narrower than sum(sel), unsorted.
    raw = expect[..., sel[0]:].flip(-1)
    out = format_nlist(ext_coord, ext_atype, raw, nloc, RCUT, sel)
    assert (out[..., : sel[0]] == -1).all()
    assert torch.equal(out[..., sel[0]:], expect[..., sel[0]:])


def test_format_warns_on_overflow(system_factory):
    coord, atype, box, _ = system_factory("skewed")
    ext_coord, ext_atype, _ = extend_coords(coord, atype, box, RCUT)
    nloc = coord.shape[1]
    raw = engine_list(ext_coord, nloc, RCUT + 1.0, extra=5, seed=12)
    with pytest.warns(NeighborOverflowWarning, match="frame 0 atom"):
        out = format_nlist(ext_coord, ext_atype, raw, nloc, RCUT, [10, 10])
    assert torch.equal(out, build_nlist_reference(ext_coord, ext_atype, nloc, RCUT, [10, 10], check_overflow=False))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NeighborOverflowWarning)
        format_nlist(ext_coord, ext_atype, raw, nloc, RCUT, [10, 10], check_overflow=False)


def test_exact_ties_ordered_by_extended_index():
    """A simple cubic lattice with exactly representable coordinates: many neighbours at bitwise equal distances.
    Ties are ordered by extended index, whatever the order of the input list."""
    grid = torch.stack(torch.meshgrid(*[torch.arange(3.0)] * 3, indexing="ij"), -1).reshape(1, -1, 3) * 2.0
    atype = (torch.arange(27) % 2)[None]
    box = torch.eye(3, dtype=torch.float64)[None] * 6.0
    ext_coord, ext_atype, _ = extend_coords(grid.double(), atype, box, 4.5)
    sel = [120, 120]
    expect = build_nlist_reference(ext_coord, ext_atype, 27, 4.5, sel)
    rr = torch.linalg.norm(ext_coord[0, expect.clamp(min=0)] - ext_coord[0, :27, None], dim=-1)
    ntied = 0
    for block in (slice(0, sel[0]), slice(sel[0], None)):
        nl, r = expect[..., block], rr[..., block]
        tied = (nl[..., 1:] >= 0) & (r[..., 1:] == r[..., :-1])
        assert (nl[..., 1:][tied] > nl[..., :-1][tied]).all()
        ntied += int(tied.sum())
    assert ntied > 500
    raw = engine_list(ext_coord, 27, 6.0, extra=10, seed=13)
    assert torch.equal(format_nlist(ext_coord, ext_atype, raw, 27, 4.5, sel), expect)
