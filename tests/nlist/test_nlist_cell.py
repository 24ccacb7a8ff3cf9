"""The cell-list builder against the O(N^2) reference: same neighbour sets per type block, on every test system,
for batches with different boxes, in float32, for a 4000-atom box and (on a GPU) for 100,000 atoms.

Scaling of `build_cell_list` (random cubic box, density 0.1 / A^3, rcut 6, float64, one frame), measured while
writing it: on a shared 2-core CPU 2k atoms 0.1 s, 8k 0.43 s, 32k 1.5 s (the reference: 36 s for 2k); on one H200
2k-8k atoms 6 ms (overhead-bound), 32k 12 ms, 100k 24 ms, 200k 48 ms with 2.1 GB peak memory. With the pair kernel
(`deeppot.kernels.cell_pairs`, run 193, H200, replicated water): 98,304 atoms 10.7-12.3 ms, 998,784 atoms 78 ms.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from deeppot.nlist import build_neighbor_data, choose_method
from deeppot.nlist.cell_list import bin_atoms, build_cell_list
from deeppot.nlist.ghosts import extend_coords
from deeppot.nlist.reference import build_nlist_reference
from deeppot.nlist.testing import assert_same_pairs, check_nlist_layout, pair_table

RCUT = 6.0


def assert_cell_matches_reference(coord, atype, box, sel, rcut=RCUT):
    ref = build_neighbor_data(coord, atype, box, rcut, sel, method="reference")
    cell = build_neighbor_data(coord, atype, box, rcut, sel, method="cell")
    check_nlist_layout(cell.ext_coord, cell.ext_atype, cell.nlist, rcut, sel)
    assert cell.nlist.shape == ref.nlist.shape
    nloc = coord.shape[1]
    torch.testing.assert_close(cell.ext_coord[:, :nloc], ref.ext_coord[:, :nloc], atol=0, rtol=0)
    assert torch.equal(cell.mapping[:, :nloc], ref.mapping[:, :nloc])
    real = cell.ext_atype >= 0
    assert torch.equal(cell.ext_atype[real], torch.gather(atype, 1, cell.mapping)[real])
    ref_pairs = pair_table(ref.ext_coord, ref.mapping, ref.nlist)
    assert len(ref_pairs) > 0
    assert_same_pairs(pair_table(cell.ext_coord, cell.mapping, cell.nlist), ref_pairs)
    # Same pairs and both layouts valid => the same neighbour set in every type block.
    return ref, cell


def test_cell_matches_reference(system):
    coord, atype, box, sel = system
    assert_cell_matches_reference(coord, atype, box, sel)


def test_cell_ghosts_are_images_of_their_owner(system_factory):
    coord, atype, box, sel = system_factory("skewed")
    data = build_neighbor_data(coord, atype, box, RCUT, sel, method="cell")
    real = data.ext_atype >= 0
    owner = torch.gather(data.ext_coord, 1, data.mapping[..., None].expand(-1, -1, 3))
    frac = ((data.ext_coord - owner) @ torch.linalg.inv(box))[real]
    torch.testing.assert_close(frac, torch.round(frac), atol=1e-9, rtol=0)


def test_batch_with_different_boxes_is_padded(random_box_system):
    """Frames needing different numbers of ghosts: padding atoms of type -1, and each frame as if alone."""
    coord_a, atype_a, box_a = random_box_system([[7.0, 0, 0], [0, 7.0, 0], [0, 0, 7.0]], 30, 2, seed=5)
    coord_b, atype_b, box_b = random_box_system([[9.0, 0, 0], [2.0, 8.0, 0], [1.0, 1.0, 10.0]], 30, 2, seed=6)
    coord, atype, box = torch.cat([coord_a, coord_b]), torch.cat([atype_a, atype_b]), torch.cat([box_a, box_b])
    sel = [60, 60]
    _, cell = assert_cell_matches_reference(coord, atype, box, sel)
    alone = [build_neighbor_data(c, t, b, RCUT, sel, method="cell") for c, t, b in
             [(coord_a, atype_a, box_a), (coord_b, atype_b, box_b)]]
    nall = [a.ext_coord.shape[1] for a in alone]
    assert nall[0] != nall[1] and cell.ext_coord.shape[1] == max(nall)
    short = int(np.argmin(nall))
    assert (cell.ext_atype[short, nall[short]:] == -1).all()
    assert (cell.mapping[short, nall[short]:] == 0).all()
    for f, a in enumerate(alone):
        assert torch.equal(cell.nlist[f], a.nlist[0])


def test_float32(system_factory):
    coord, atype, box, sel = system_factory("skewed")
    ref = build_neighbor_data(coord.float(), atype, box.float(), RCUT, sel, method="reference")
    cell = build_neighbor_data(coord.float(), atype, box.float(), RCUT, sel, method="cell")
    assert cell.ext_coord.dtype == torch.float32
    check_nlist_layout(cell.ext_coord, cell.ext_atype, cell.nlist, RCUT, sel)
    assert_same_pairs(pair_table(cell.ext_coord, cell.mapping, cell.nlist, decimals=3),
                      pair_table(ref.ext_coord, ref.mapping, ref.nlist, decimals=3))


def test_virtual_atoms(system_factory):
    coord, atype, box, sel = system_factory("water")
    atype = atype.clone()
    atype[:, [0, 5, 100]] = -1
    _, cell = assert_cell_matches_reference(coord, atype, box, sel)
    assert (cell.nlist[:, [0, 5, 100]] == -1).all()


def test_ext_coord_differentiable(system_factory):
    coord, atype, box, sel = system_factory("tiny")
    coord = coord.clone().requires_grad_(True)
    data = build_neighbor_data(coord, atype, box, RCUT, sel, method="cell")
    data.ext_coord[data.ext_atype >= 0].sum().backward()
    images = torch.bincount(data.mapping[data.ext_atype >= 0], minlength=coord.shape[1]).to(coord.dtype)
    torch.testing.assert_close(coord.grad[0], images[:, None].expand(-1, 3))


def reference_for_sample(coord, atype, box, rcut, sel, sample):
    """Reference rows of the atoms `sample` only: the sample is moved to the front, so that it is the first
    `len(sample)` extended atoms, and the reference is built for those centres. Returns ext_coord, mapping (in
    original atom indices) and nlist (1, nsample, nnei)."""
    rest = torch.ones(coord.shape[1], dtype=torch.bool)
    rest[sample] = False
    perm = torch.cat([sample, rest.nonzero().flatten()]).to(coord.device)
    ext_coord, ext_atype, mapping = extend_coords(coord[:, perm], atype[:, perm], box, rcut)
    nlist = build_nlist_reference(ext_coord, ext_atype, len(sample), rcut, sel)
    return ext_coord, perm[mapping], nlist


def assert_large_box_matches(natoms, nsample, device, seed):
    gen = torch.Generator().manual_seed(seed)
    side = (natoms / 0.1) ** (1 / 3)  # liquid-like density 0.1 / A^3
    coord = (torch.rand(1, natoms, 3, generator=gen, dtype=torch.float64) * side).to(device)
    atype = torch.randint(0, 2, (1, natoms), generator=gen).to(device)
    box = (torch.eye(3, dtype=torch.float64) * side)[None].to(device)
    sel = [80, 80]  # ~45 neighbours of each type: no overflow
    ext_coord, ext_atype, mapping, nlist = build_cell_list(coord, atype, box, RCUT, sel)
    check_nlist_layout(ext_coord, ext_atype, nlist, RCUT, sel)
    sample = torch.randperm(natoms, generator=gen)[:nsample]
    ref_coord, ref_mapping, ref_nlist = reference_for_sample(coord, atype, box, RCUT, sel, sample)
    cell_rows = nlist[:, sample.to(device)]
    # Express the cell list's centres as 0..nsample-1 so both tables use the same centre numbering.
    centres = torch.cat([sample.to(device), torch.arange(natoms, device=device)])
    ext_cell = torch.cat([ext_coord[:, centres[:nsample]], ext_coord], dim=1)
    shifted = torch.where(cell_rows >= 0, cell_rows + nsample, -1)
    map_cell = torch.cat([mapping[:, centres[:nsample]], mapping], dim=1)
    assert_same_pairs(pair_table(ext_cell, map_cell, shifted), pair_table(ref_coord, ref_mapping, ref_nlist))


def test_4000_atom_box_matches_reference_on_sample():
    assert_large_box_matches(4000, 48, "cpu", seed=7)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_100k_atoms_on_gpu_match_reference_on_sample():
    assert_large_box_matches(100_000, 32, "cuda", seed=8)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu(system_factory):
    """Same neighbours on both devices (indices may differ where near-tied distances round differently)."""
    coord, atype, box, sel = system_factory("skewed")
    cpu = build_neighbor_data(coord, atype, box, RCUT, sel, method="cell")
    for method in ("cell", "reference"):
        gpu = build_neighbor_data(coord.cuda(), atype.cuda(), box.cuda(), RCUT, sel, method=method)
        assert gpu.nlist.is_cuda
        check_nlist_layout(gpu.ext_coord, gpu.ext_atype, gpu.nlist, RCUT, sel)
        assert_same_pairs(pair_table(gpu.ext_coord, gpu.mapping, gpu.nlist),
                          pair_table(cpu.ext_coord, cpu.mapping, cpu.nlist))


def test_auto_method_and_errors(system_factory):
    coord, atype, box, sel = system_factory("water")
    assert choose_method(coord, box, RCUT) == "cell"  # 192 x 5184 pairs per frame: the cell list is faster
    small = choose_method(coord[:, :20], box, RCUT)
    assert small == "reference"
    auto = build_neighbor_data(coord, atype, box, RCUT, sel)
    assert auto.nlist.shape == (2, 192, sum(sel))
    with pytest.raises(ValueError, match="method"):
        build_neighbor_data(coord, atype, box, RCUT, sel, method="fast")
    with pytest.raises(ValueError, match="rcut"):
        build_neighbor_data(coord, atype, box, -1.0, sel)


@pytest.mark.parametrize("method", ["cell", "reference"])
def test_a_cell_of_zero_volume_is_named(system_factory, method):
    coord, atype, box, sel = system_factory("skewed")
    flat = box.clone()
    flat[1, 2] = flat[1, 0] + flat[1, 1]  # frame 1's third vector in the plane of the first two
    with pytest.raises(ValueError, match="cell of frame 1 has zero volume"):
        build_neighbor_data(coord, atype, flat, RCUT, sel, method=method)


def test_bins_hold_each_atom_once_in_order(system_factory):
    """The bins' runs in the sorted order (start, count from the sorted ids) against a bincount of the ids."""
    coord, _, box, _ = system_factory("skewed")
    bins = bin_atoms(extend_coords(coord, torch.zeros(coord.shape[:2], dtype=torch.long), box, RCUT)[0][0], RCUT)
    nx, ny, _ = bins.dims
    bin_id = (bins.cell[:, 2] * ny + bins.cell[:, 1]) * nx + bins.cell[:, 0]
    count = torch.bincount(bin_id, minlength=len(bins.count))
    assert torch.equal(bins.count, count) and torch.equal(bins.start, torch.cumsum(count, 0) - count)
    assert torch.equal(bin_id[bins.order], torch.sort(bin_id).values)
    assert bins.count.sum() == len(bin_id) and len(bins.count) == nx * ny * bins.dims[2] > 1
