"""Periodic images (spec §3.1): wrapping, face distances, image order, mapping and completeness."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from deeppot.nlist.cell_list import FrameCell, extend_frame
from deeppot.nlist.ghosts import extend_coords, face_distances, image_shifts, nbuff_for, wrap_coords, wrap_fractional

RCUT = 6.0


def lattice_shifts(ext_coord, mapping, box):
    """Integer lattice shift of every extended atom relative to its owner: (nf, nall, 3) int64, checked integer."""
    owner = torch.gather(ext_coord, 1, mapping[..., None].expand(-1, -1, 3))
    frac = (ext_coord - owner) @ torch.linalg.inv(box)
    shift = torch.round(frac)
    torch.testing.assert_close(frac, shift, atol=1e-9, rtol=0)
    return shift.long()


def images_within_rcut(coord, box, rcut, layers):
    """Brute force over +-layers images: set of (frame, owner j, shift) within rcut of some local atom."""
    found = set()
    for f in range(coord.shape[0]):
        for n in itertools.product(range(-layers, layers + 1), repeat=3):
            img = coord[f] + torch.tensor(n, dtype=coord.dtype) @ box[f]  # (nloc, 3)
            near = (torch.cdist(img, coord[f]) <= rcut).any(dim=1)
            found |= {(f, j, n) for j in near.nonzero().flatten().tolist()}
    return found


def present_images(ext_coord, ext_atype, mapping, box):
    """Set of (frame, owner, shift) held by an extended array (padding atoms of type -1 excluded)."""
    shift = lattice_shifts(ext_coord, mapping, box)
    frame, ext = (ext_atype >= 0).nonzero(as_tuple=True)
    return {(f, j, tuple(s)) for f, j, s in
            zip(frame.tolist(), mapping[frame, ext].tolist(), shift[frame, ext].tolist(), strict=True)}


def test_wrap_coords_into_cell(system_factory):
    coord, _, box, _ = system_factory("skewed")
    wrapped = wrap_coords(coord, box)
    frac = wrapped @ torch.linalg.inv(box)
    assert frac.min() >= -1e-12 and frac.max() < 1 + 1e-12
    moved = (wrapped - coord) @ torch.linalg.inv(box)
    torch.testing.assert_close(moved, torch.round(moved), atol=1e-9, rtol=0)
    assert (coord @ torch.linalg.inv(box)).min() < 0  # the fixture does put atoms outside the cell


def test_face_distances():
    ortho = torch.diag(torch.tensor([3.0, 4.0, 5.0], dtype=torch.float64))[None]
    torch.testing.assert_close(face_distances(ortho), torch.tensor([[3.0, 4.0, 5.0]], dtype=torch.float64))
    a, b, c, s = 3.0, 4.0, 5.0, 2.0  # b tilted by s along x: h_a = a b / sqrt(b^2 + s^2)
    sheared = torch.tensor([[[a, 0, 0], [s, b, 0], [0, 0, c]]], dtype=torch.float64)
    expect = torch.tensor([[a * b / (b**2 + s**2) ** 0.5, b, c]], dtype=torch.float64)
    torch.testing.assert_close(face_distances(sheared), expect)


def test_image_shifts_ordered_by_norm():
    shifts = image_shifts([2, 1, 3])
    assert shifts.shape == (5 * 3 * 7, 3)
    assert shifts[0].tolist() == [0, 0, 0]
    norm2 = (shifts**2).sum(-1)
    assert (norm2[1:] >= norm2[:-1]).all()
    assert len({tuple(s) for s in shifts.tolist()}) == shifts.shape[0]


@pytest.mark.parametrize("name", ["skewed", "tiny", "water"])
def test_extend_coords_layout(system_factory, name):
    coord, atype, box, _ = system_factory(name)
    nf, nloc = atype.shape
    ext_coord, ext_atype, mapping = extend_coords(coord, atype, box, RCUT)
    nall = ext_coord.shape[1]
    assert nall % nloc == 0 and nall > nloc
    torch.testing.assert_close(ext_coord[:, :nloc], wrap_coords(coord, box))
    assert torch.equal(mapping, torch.arange(nall).expand(nf, nall) % nloc)
    assert torch.equal(ext_atype, torch.gather(atype, 1, mapping))
    shift = lattice_shifts(ext_coord, mapping, box).reshape(nf, nall // nloc, nloc, 3)
    assert (shift == shift[:, :, :1]).all()  # one shift per block of nloc atoms
    norm2 = (shift[0, :, 0] ** 2).sum(-1)
    assert norm2[0] == 0 and (norm2[1:] >= norm2[:-1]).all()


@pytest.mark.parametrize("name", ["skewed", "tiny"])
def test_every_image_within_rcut_present(system_factory, name):
    coord, atype, box, _ = system_factory(name)
    wrapped, frac = wrap_coords(coord, box), wrap_fractional(coord, box)
    layers = 5 if name == "tiny" else 4  # more than the ceil(rcut / h) that extend_coords uses
    needed = images_within_rcut(wrapped, box, RCUT, layers)
    ext_coord, ext_atype, mapping = extend_coords(coord, atype, box, RCUT)
    assert needed <= present_images(ext_coord, ext_atype, mapping, box)
    # The cell list's ghost slab holds every needed image too (and is smaller than the full image set).
    for f in range(coord.shape[0]):
        ec, et, mp = extend_frame(wrapped[f], atype[f], FrameCell(frac[f], box[f], box[f].double()), RCUT)
        held = present_images(ec[None], et[None], mp[None], box[f : f + 1])
        assert {(0, j, n) for g, j, n in needed if g == f} <= held
        assert ec.shape[0] < ext_coord.shape[1]


def test_no_box_means_no_images(system_factory):
    coord, atype, _, _ = system_factory("cluster")
    ext_coord, ext_atype, mapping = extend_coords(coord, atype, None, RCUT)
    assert torch.equal(ext_coord, coord) and torch.equal(ext_atype, atype)
    assert torch.equal(mapping, torch.arange(coord.shape[1])[None])


def test_extended_coords_are_differentiable(system_factory):
    coord, atype, box, _ = system_factory("skewed")
    coord = coord.clone().requires_grad_(True)
    ext_coord, _, mapping = extend_coords(coord, atype, box, RCUT)
    ext_coord.sum().backward()
    images = torch.zeros_like(coord[..., 0]).scatter_add_(1, mapping, torch.ones_like(mapping, dtype=coord.dtype))
    torch.testing.assert_close(coord.grad, images[..., None].expand(-1, -1, 3))


def test_image_layers_follow_the_box_they_remember():
    """nbuff_for remembers its last boxes' answers; a changed box, frame count or cutoff gets its own."""
    box = torch.tensor([[[5.0, 0.0, 0.0], [1.0, 4.0, 0.0], [0.5, 0.5, 3.0]]], dtype=torch.float64)
    first = nbuff_for(box, 4.0)
    assert first == [math.ceil(4.0 / float(h)) for h in face_distances(box)[0]]
    assert nbuff_for(box.clone(), 4.0) == first
    assert nbuff_for(box * 2.0, 4.0) == [math.ceil(4.0 / float(h)) for h in face_distances(box * 2.0)[0]] != first
    assert nbuff_for(box, 8.0) != first
    assert nbuff_for(torch.cat([box, box * 0.5]), 4.0) == nbuff_for(box * 0.5, 4.0)
    flat = box.clone()
    flat[0, 2] = flat[0, 0] + flat[0, 1]
    with pytest.raises(ValueError, match="zero volume"):
        nbuff_for(flat, 4.0)
