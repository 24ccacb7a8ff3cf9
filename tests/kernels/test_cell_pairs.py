"""The cell list's pair kernel against its PyTorch twin (`deeppot.nlist.cell_list.pair_rows`): each row holds the
twin's neighbours in the twin's order (and at most a few more within the kernel's margin beyond rcut, which the
builder drops), and the whole build gives the same lists, on periodic, triclinic, small-cell and non-periodic
systems with virtual atoms, in float64 and float32. Its selecting walk (`select_pairs`) against the twin's rows
selected in candidate order (`deeppot.infer.candidates.cell_neighbors` on either path): the same list entry for
entry and the same overflow flag."""

from __future__ import annotations

import pytest
import torch

from deeppot.infer import candidates
from deeppot.nlist import cell_list
from deeppot.nlist.selection import distance

kernels = pytest.importorskip("deeppot.kernels.cell_pairs")
if kernels.embedding.triton is None:
    pytest.skip("triton is not installed", allow_module_level=True)

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
SKEWED = [[7.0, 0.0, 0.0], [3.0, 6.5, 0.0], [2.0, -3.0, 7.5]]
TINY = [[2.6, 0.0, 0.0], [0.4, 2.4, 0.0], [0.3, 0.2, 2.5]]
RCUT = 4.0


def system(rows, natoms: int, ntypes: int, seed: int, dtype):
    """Two frames of random atoms (a few virtual ones) in a cell scaled per frame, or a cluster."""
    gen = torch.Generator().manual_seed(seed)
    atype = torch.randint(0, ntypes, (2, natoms), generator=gen)
    atype[:, natoms // 3] = -1
    if rows is None:
        coord, box = torch.rand(2, natoms, 3, generator=gen, dtype=torch.float64) * 9.0, None
    else:
        box = torch.stack([torch.tensor(rows, dtype=torch.float64) * s for s in (1.0, 1.1)])
        coord = (torch.rand(2, natoms, 3, generator=gen, dtype=torch.float64) * 1.4 - 0.2) @ box
        box = box.to(DEVICE, dtype)
    return coord.to(DEVICE, dtype), atype.to(DEVICE), box


@pytest.mark.parametrize(("rows", "natoms", "ntypes"), [(SKEWED, 50, 2), (TINY, 4, 2), (None, 60, 3)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_kernel_rows_hold_the_twins_neighbours_in_order(monkeypatch, rows, natoms, ntypes, dtype):
    coord, atype, box = system(rows, natoms, ntypes, seed=natoms, dtype=dtype)
    calls = []

    def both(*args):
        calls.append((args, cell_list.pair_rows(*args), kernels.pair_rows(*args)))
        return calls[-1][2]

    monkeypatch.setattr(cell_list, "_pair_rows_on", lambda device: both)
    got = cell_list.build_cell_list(coord, atype, box, RCUT, [40] * ntypes)
    monkeypatch.undo()
    want = cell_list.build_cell_list(coord, atype, box, RCUT, [40] * ntypes)
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g, w)
    assert len(calls) == 2  # one chunk a frame
    for args, twin, kernel in calls:
        pos, offset = args[0], args[6]
        assert kernel.shape[0] == twin.shape[0] and (twin >= 0).sum() > 0
        for r in range(twin.shape[0]):
            k = kernel[r][kernel[r] >= 0]
            within = distance(pos[offset + r], pos[k]) <= RCUT
            assert torch.equal(k[within], twin[r][twin[r] >= 0])


def test_an_empty_chunk_gives_empty_rows():
    pos = torch.zeros(3, 3, dtype=torch.float64, device=DEVICE)
    empty = torch.zeros(0, 9, dtype=torch.int64, device=DEVICE)
    order = torch.arange(3, device=DEVICE)
    assert kernels.pair_rows(pos, pos, order, order, empty, empty, 0, RCUT).shape == (0, 0)


@pytest.mark.parametrize(("rows", "natoms", "ntypes"), [(SKEWED, 50, 2), (None, 60, 3)])
def test_skin_candidates_through_the_kernel_equal_the_twins(monkeypatch, rows, natoms, ntypes):
    """`build_candidates` (a skin list's build): the same candidates, in ascending order, by either path (the kernel
    could add an atom within its margin beyond the radius; none lies there in these systems)."""
    coord, atype, box = system(rows, natoms, ntypes, seed=natoms + 1, dtype=torch.float64)
    want = cell_list.build_candidates(coord, atype, box, RCUT)
    monkeypatch.setattr(cell_list, "_pair_rows_on", lambda device: kernels.pair_rows)
    got = cell_list.build_candidates(coord, atype, box, RCUT)
    assert (want[3] >= 0).sum() > 0
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g, w)


@pytest.mark.parametrize(("rows", "natoms", "ntypes", "sel", "overflows"), [
    (SKEWED, 50, 2, [40, 40], False), (TINY, 4, 2, [60, 60], False), (None, 60, 3, [20, 20, 20], False),
    (SKEWED, 50, 2, [6, 40], True)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_selecting_walk_equals_the_twins_rows_selected(monkeypatch, rows, natoms, ntypes, sel, overflows, dtype):
    coord, atype, box = system(rows, natoms, ntypes, seed=natoms + 2, dtype=dtype)
    monkeypatch.setattr(candidates, "gpu_kernels", lambda device: False)
    want = candidates.cell_neighbors(coord, atype, box, RCUT, sel)
    monkeypatch.setattr(candidates, "gpu_kernels", lambda device: True)
    got = candidates.cell_neighbors(coord, atype, box, RCUT, sel)
    assert (want[3] >= 0).sum() > 0 and (want[3][:, natoms // 3] == -1).all()  # a virtual centre: an empty row
    for g, w in zip(got[:4], want[:4], strict=True):
        assert torch.equal(g, w)
    assert bool(got[4]) == bool(want[4]) == overflows
