"""The neighbour-selection kernels against their PyTorch twins (`deeppot.infer.candidates.select_in_candidate_order`,
MD's, on skin-list candidates; `select_all_pairs`, a small system's, on every periodic image): the same list entry
for entry and the same overflow flag, on periodic, triclinic, small-cell and non-periodic systems, with virtual
atoms, after moves, and with sel too small."""

from __future__ import annotations

import pytest
import torch

from deeppot.infer.candidates import select_all_pairs
from deeppot.infer.candidates import select_in_candidate_order as reference
from deeppot.infer.neighbors import SkinNeighborList, extended_positions
from deeppot.nlist import extend_coords

kernels = pytest.importorskip("deeppot.kernels.selection")
if kernels.embedding.triton is None:
    pytest.skip("triton is not installed", allow_module_level=True)

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
SKEWED = [[6.0, 0.0, 0.0], [4.0, 5.5, 0.0], [3.0, -4.0, 6.5]]
TINY = [[2.6, 0.0, 0.0], [0.4, 2.4, 0.0], [0.3, 0.2, 2.5]]


def system(rows, natoms: int, ntypes: int, seed: int, dtype=torch.float64):
    """Two frames of random atoms (types 0..ntypes-1, a few virtual ones) in a cell scaled per frame, or a cluster."""
    gen = torch.Generator().manual_seed(seed)
    atype = torch.randint(0, ntypes, (2, natoms), generator=gen)
    atype[:, natoms // 2] = -1
    if rows is None:
        return torch.rand(2, natoms, 3, generator=gen, dtype=dtype) * 10.0, atype, None
    box = torch.stack([torch.tensor(rows, dtype=dtype) * s for s in (1.0, 1.07)])
    frac = torch.rand(2, natoms, 3, generator=gen, dtype=dtype) * 1.4 - 0.2
    return frac @ box, atype, box


@pytest.mark.parametrize(("rows", "natoms", "ntypes", "sel", "overflows"), [
    (SKEWED, 40, 2, [80, 80], False), (TINY, 3, 2, [60, 60], False), (None, 60, 3, [30, 20, 25], False),
    (SKEWED, 40, 2, [9, 25], True), (SKEWED, 30, 1, [150], False)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_kernel_equals_its_pytorch_twin(rows, natoms, ntypes, sel, overflows, dtype):
    coord, atype, box = system(rows, natoms, ntypes, seed=natoms + len(sel))
    coord, atype = coord.to(DEVICE, dtype), atype.to(DEVICE)
    box = None if box is None else box.to(DEVICE, dtype)
    nl = SkinNeighborList(4.0, [80] * ntypes, 1.0)  # candidates of a roomy list; sel applied below
    nl.build(coord, atype, box)
    moved = coord + 0.4 * torch.rand(coord.shape, generator=torch.Generator().manual_seed(1)).to(DEVICE, dtype)
    ext_coord = extended_positions(nl.ref, moved, box)
    args = (ext_coord, nl.ref.ext_atype, nl.ref.candidates, nl.ref.cand_type, 4.0, sel)
    want, want_over = reference(*args)
    got, got_over = kernels.select_in_candidate_order(*args)
    assert (want >= 0).sum() > 0
    assert torch.equal(got, want)
    assert bool(got_over) == bool(want_over) == overflows


@pytest.mark.parametrize(("rows", "natoms", "ntypes", "sel", "overflows"), [
    (SKEWED, 40, 2, [80, 80], False), (TINY, 3, 2, [60, 60], False), (None, 60, 3, [30, 20, 25], False),
    (SKEWED, 40, 2, [9, 25], True), (SKEWED, 30, 1, [150], False)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_all_pairs_kernel_equals_its_pytorch_twin(rows, natoms, ntypes, sel, overflows, dtype):
    """Several blocks of extended atoms a centre (the skewed cell has 1,800 a frame; a block is 1,024)."""
    coord, atype, box = system(rows, natoms, ntypes, seed=natoms + 7 * len(sel))
    coord, atype = coord.to(DEVICE, dtype), atype.to(DEVICE)
    box = None if box is None else box.to(DEVICE, dtype)
    ext_coord, ext_atype, _ = extend_coords(coord, atype, box, 4.0)
    want, want_over = select_all_pairs(ext_coord, ext_atype, natoms, 4.0, sel)
    got, got_over = kernels.select_all_pairs(ext_coord, ext_atype, natoms, 4.0, sel)
    assert (want >= 0).sum() > 0
    assert torch.equal(got, want)
    assert bool(got_over) == bool(want_over) == overflows
