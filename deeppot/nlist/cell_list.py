"""Cell-list neighbour builder: linear in the number of atoms, same selection rule as the reference.

Per frame: (a) wrap the atoms, (b) add only the ghosts that lie within rcut of the cell (in fractional coordinates,
so skewed cells and cells smaller than rcut work), (c) bin local + ghost atoms into cubic bins of edge ~rcut/2 in
their bounding box and sort them by bin, (d) for each local atom measure the atoms of the bins within reach and
keep those within rcut as a row (`pair_rows`: a ragged list of candidate pairs in PyTorch; on a GPU one Triton
kernel, `deeppot.kernels.cell_pairs`, which never stores the pairs), then select with `select_neighbors`, the
reference's rule (`build_cell_list`), or keep every row as it is, in ascending index order (`build_candidates`, the
Verlet-skin list's candidates). Frames are processed one at a time (a few host syncs each, fine in a build step)
and padded to a common nall with atoms of type -1.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor

from deeppot.nlist.ghosts import as_box, face_distances, frac_to_cart, host_cells, image_shifts, wrap_fractional
from deeppot.nlist.selection import distance, mask_virtual_centres, select_neighbors

# Fractional slack on the ghost region: a few extra ghosts cost nothing, a missing one is a wrong list.
_GHOST_SLACK = 1e-6
# Relative slack on the bin edge: rcut / edge stays just below a whole number, so that rounding never puts a
# neighbour at exactly rcut one bin farther than `reach`.
_EDGE_SLACK = 1e-6
# Bins of edge rcut / 2 searched over +-2 bins cover a (2.5 rcut)^3 box instead of the (3 rcut)^3 of rcut-bins.
_BINS_PER_RCUT = 2


class FrameCell(NamedTuple):
    """One frame's periodic cell as the builder uses it."""

    frac: Tensor  # (nloc, 3) wrapped fractional coordinates of the atoms
    box: Tensor  # (3, 3) row vectors, on the atoms' device
    host: Tensor  # (3, 3) float64 the same box on the host: the ghost region is sized from it without a sync


@dataclass
class Bins:
    """Atoms sorted into a grid of cubic bins; bin id = (z * ny + y) * nx + x, so x-neighbours are contiguous."""

    order: Tensor  # (nall,) atom indices sorted by bin
    start: Tensor  # (nbins,) position in `order` of each bin's first atom
    count: Tensor  # (nbins,) atoms per bin
    cell: Tensor  # (nall, 3) int64 bin coordinates (x, y, z) of each atom
    dims: list[int]  # bins per direction
    reach: int  # a neighbour within rcut is at most `reach` bins away in each direction


def build_cell_list(
    coord: Tensor,
    atype: Tensor,
    box: Tensor | None,
    rcut: float,
    sel: Sequence[int],
    check_overflow: bool = True,
    chunk_elems: int | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Extended atoms and neighbour list with a cell list.

    Args:
        coord: (nf, nloc, 3) positions.
        atype: (nf, nloc) int64 types (type < 0: virtual atom, never a neighbour, gets no list).
        box: (nf, 3, 3) or (nf, 9) cell row vectors, or None (non-periodic).
        rcut: cutoff radius.
        sel: maximal neighbours per type.
        check_overflow: emit a NeighborOverflowWarning when a type has more than sel[t] neighbours.
        chunk_elems: candidate pairs handled at once (bounds memory, ~100 bytes a pair); default by device.

    Returns:
        ext_coord (nf, nall, 3), ext_atype (nf, nall), mapping (nf, nall), nlist (nf, nloc, sum(sel)); nall is the
        largest per-frame count, shorter frames are padded with type -1, mapping 0 atoms placed beyond rcut.
    """
    nf = atype.shape[0]
    coord, cells = wrapped_cells(coord, box)
    chunk_elems = chunk_elems or _chunk_elems(coord)
    frames = [_build_frame(coord[f], atype[f], cells[f], rcut, sel, chunk_elems) for f in range(nf)]
    ext_coord, ext_atype, mapping = pad_frames([fr[:3] for fr in frames], rcut)
    nlist = torch.stack([fr[3] for fr in frames])
    count = torch.stack([fr[4] for fr in frames])
    nlist = mask_virtual_centres(nlist, count, atype, sel, rcut, check_overflow)
    return ext_coord, ext_atype, mapping, nlist


def _build_frame(
    coord: Tensor,
    atype: Tensor,
    cell: FrameCell | None,
    rcut: float,
    sel: Sequence[int],
    chunk_elems: int,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """One frame: wrapped coord (nloc, 3), atype (nloc,), its FrameCell | None ->
    ext_coord, ext_atype, mapping, nlist, count."""
    ext_coord, ext_atype, mapping, chunks = _frame_rows(coord, atype, cell, rcut, chunk_elems)
    parts = [_select_rows(ext_coord.detach(), ext_atype, a, rows, rcut, sel) for a, rows in chunks]
    nlist = torch.cat([p[0] for p in parts])
    count = torch.cat([p[1] for p in parts])
    return ext_coord, ext_atype, mapping, nlist, count


class BinnedFrame(NamedTuple):
    """One frame's extended atoms, sorted into bins: what a walk of each centre's runs of bins reads."""

    ext_coord: Tensor  # (nall, 3), differentiable in the frame's coord and box
    ext_atype: Tensor  # (nall,)
    mapping: Tensor  # (nall,)
    bins: Bins
    pos_sorted: Tensor  # (nall, 3) the positions in bin order (detached)
    type_sorted: Tensor  # (nall,) the types in bin order



def bin_frame(coord: Tensor, atype: Tensor, cell: FrameCell | None, rcut: float) -> BinnedFrame:
    """One frame (coord wrapped into the cell when periodic, its FrameCell or None): its ghosts and its bins."""
    if coord.shape[0] == 0:
        raise ValueError("the cell list needs at least one atom per frame")
    ext_coord, ext_atype, mapping = extend_frame(coord, atype, cell, rcut)
    pos = ext_coord.detach()
    bins = bin_atoms(pos, rcut)
    return BinnedFrame(ext_coord, ext_atype, mapping, bins, pos[bins.order], ext_atype[bins.order])


def _frame_rows(coord: Tensor, atype: Tensor, cell: FrameCell | None, rcut: float, chunk_elems: int | None
                ) -> tuple[Tensor, Tensor, Tensor, Iterator[tuple[int, Tensor]]]:
    """One frame's extended atoms and, chunk by chunk of centres (about chunk_elems candidate pairs each, so that
    memory stays bounded; None: one chunk), the (first centre, `pair_rows`) of its centres: ext_coord, ext_atype,
    mapping, chunks."""
    frame = bin_frame(coord, atype, cell, rcut)
    nloc = coord.shape[0]
    seg_start, seg_len = bin_runs(frame.bins, nloc)
    bounds = [0, nloc] if chunk_elems is None else _chunk_bounds(seg_len, chunk_elems)
    rows_of = _pair_rows_on(coord.device)
    chunks = ((a, rows_of(frame.ext_coord.detach(), frame.pos_sorted, frame.type_sorted, frame.bins.order,
                          seg_start[a:b], seg_len[a:b], a, rcut)) for a, b in itertools.pairwise(bounds))
    return frame.ext_coord, frame.ext_atype, frame.mapping, chunks


def _chunk_bounds(seg_len: Tensor, chunk_elems: int) -> list[int]:
    """First centres of chunks of about chunk_elems candidate pairs each, and the centre count (one host sync)."""
    pairs = torch.cumsum(seg_len.sum(dim=1), 0).cpu()
    ends = torch.searchsorted(pairs, torch.arange(1, int(pairs[-1]) // chunk_elems + 1) * chunk_elems).tolist()
    return sorted({0, seg_len.shape[0], *(min(max(e, 1), seg_len.shape[0]) for e in ends)})


def build_candidates(coord: Tensor, atype: Tensor, box: Tensor | None, radius: float,
                     chunk_elems: int | None = None, ascending: bool = True) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Extended atoms and every atom within `radius` of each local atom: the candidates of a Verlet-skin list
    (`deeppot.infer.neighbors`), unselected and of no fixed width.

    Arguments and the first three results as `build_cell_list` (chunk_elems: by default one chunk where the pair
    kernel runs, which stores no pairs); then cand (nf, nloc, ncand) int64: each row's
    extended indices in ascending order (or, if not `ascending`, in the order the bins hold them: no sort), -1
    padded at the end, ncand the fullest row. Atoms of type < 0 are no
    candidates (virtual centres keep theirs: the selection gives them no neighbours). On a GPU the rows may also
    hold atoms a hair beyond radius (within `deeppot.kernels.cell_pairs.MARGIN` of it, relative: ~600 of the 21
    million candidates of 98,304 water atoms at 8 Å, run 193), which no selection within rcut < radius notices.
    """
    coord, cells = wrapped_cells(coord, box)
    if chunk_elems is None and _pair_rows_on(coord.device) is pair_rows:  # the kernel stores no pairs: one chunk
        chunk_elems = _chunk_elems(coord)
    frames, cands = [], []
    for f in range(atype.shape[0]):
        ext_coord, ext_atype, mapping, chunks = _frame_rows(coord[f], atype[f], cells[f], radius, chunk_elems)
        frames.append((ext_coord, ext_atype, mapping))
        rows = [r for _, r in chunks]
        if ascending:
            rows = [_ascending(r, ext_coord.shape[0]) for r in rows]
        cands.append(_padded_cat(rows)[None])
    return *pad_frames(frames, radius), _padded_cat(cands)


def wrapped_cells(coord: Tensor, box: Tensor | None, host_box: Tensor | None = None
                  ) -> tuple[Tensor, list[FrameCell | None]]:
    """coord (nf, nloc, 3) wrapped into the cell and each frame's FrameCell, or coord as it is and None per frame
    (non-periodic). Wrapped for the whole batch with the reference's own expressions (`wrap_coords`), so that the
    builders agree bitwise; the boxes are read on the host once, here, while the GPU has little queued (host_box:
    the caller's host copy, which saves that read)."""
    if box is None:
        return coord, [None] * coord.shape[0]
    boxes = as_box(box, coord.shape[0], coord.dtype)
    host = host_cells(boxes if host_box is None else as_box(host_box, coord.shape[0], torch.float64))
    frac = wrap_fractional(coord, boxes)
    cells = [FrameCell(*parts) for parts in zip(frac.unbind(0), boxes.unbind(0), host.unbind(0), strict=True)]
    return frac_to_cart(frac, boxes[:, None]), cells


def _chunk_elems(coord: Tensor) -> int:
    """Candidate pairs handled at once by default (~100 bytes a pair on the PyTorch path)."""
    return 2**24 if coord.is_cuda else 2**21


def _ascending(rows: Tensor, nall: int) -> Tensor:
    """Rows of extended indices, -1 padded anywhere, in ascending order with the padding last."""
    key = torch.sort(torch.where(rows >= 0, rows, nall), dim=-1).values
    return torch.where(key < nall, key, -1)


def _padded_cat(parts: list[Tensor]) -> Tensor:
    """Concatenate along the first axis rows of different widths (the last axis), padding each to the widest with
    -1."""
    width = max(p.shape[-1] for p in parts)
    return torch.cat([torch.nn.functional.pad(p, (0, width - p.shape[-1]), value=-1) for p in parts])


def ghost_images(frac: Tensor, box: Tensor, rcut: float) -> tuple[Tensor, Tensor]:
    """Periodic images that can be within rcut of an atom in the cell.

    Args:
        frac: (nloc, 3) wrapped fractional coordinates in [0, 1].
        box: (3, 3) cell row vectors, float64 on the host (`FrameCell.host`).
        rcut: cutoff radius.

    Returns:
        atom (nghost,) int64 owner of each ghost, shift (nghost, 3) int64 lattice shift; ordered by shift norm, then
        atom. A point within rcut of the cell is within rcut / h_d of it in fractional direction d (h_d = face
        distance), so that slab, not the whole shifted cell, is kept.
    """
    reach, nbuff = ghost_reach(box, rcut, frac.dtype)
    shifts = image_shifts(nbuff)[1:]  # zero shift = the local atoms themselves
    # copies from the host that do not wait for the GPU's queue (a blocking one would: a host sync)
    shifts, reach = shifts.to(frac.device, non_blocking=True), reach.to(frac.device, non_blocking=True)
    shift_index, atom = in_slab(frac, shifts, reach).nonzero(as_tuple=True)
    return atom, shifts[shift_index]


def ghost_reach(box: Tensor, rcut: float, dtype: torch.dtype) -> tuple[Tensor, list[int]]:
    """The ghost slab's reach beyond the cell in fractional coordinates, (3,) in dtype on the host, and the image
    layers it spans: box (3, 3) float64 on the host."""
    reach = (rcut / face_distances(box) + _GHOST_SLACK).to(dtype)
    return reach, [math.floor(x) + 1 for x in reach.tolist()]


def in_slab(frac: Tensor, shifts: Tensor, reach: Tensor) -> Tensor:
    """Which images (nshift, nloc) of the atoms at frac (nloc, 3) moved by shifts (nshift, 3) lie in the slab."""
    img = frac[None, :, :] + shifts[:, None, :].to(frac.dtype)
    return ((img >= -reach) & (img <= 1 + reach)).all(dim=-1)


def extend_frame(
    coord: Tensor, atype: Tensor, cell: FrameCell | None, rcut: float
) -> tuple[Tensor, Tensor, Tensor]:
    """Local atoms followed by the ghosts of `ghost_images`.

    Args:
        coord: (nloc, 3) positions, already wrapped into the cell when periodic.
        atype: (nloc,) types.
        cell: the frame's FrameCell, or None (non-periodic).
        rcut: cutoff radius.

    Returns:
        ext_coord (nall, 3), ext_atype (nall,), mapping (nall,); differentiable in coord and box.
    """
    local = torch.arange(coord.shape[0], device=coord.device)
    if cell is None:
        return coord.clone(), atype.clone(), local
    atom, shift = ghost_images(cell.frac.detach(), cell.host, rcut)
    ghosts = coord[atom] + frac_to_cart(shift.to(coord.dtype), cell.box)  # as in `extend_coords`: bitwise equal
    return torch.cat([coord, ghosts]), torch.cat([atype, atype[atom]]), torch.cat([local, atom])


def bin_atoms(pos: Tensor, rcut: float, bins_per_atom: float = 2.0) -> Bins:
    """Sort atoms (nall, 3) into cubic bins of edge about rcut / 2 spanning their bounding box.

    The edge grows when the bounding box is sparse (a spread-out cluster), so that the number of bins stays below
    `bins_per_atom * nall + 64` and memory stays linear.
    """
    pos = pos.to(torch.float64)  # binning in float64: float32 rounding must not move an atom one bin too far
    lo = pos.amin(dim=0)
    extent = (pos.amax(dim=0) - lo).cpu().tolist()
    edge, dims = bin_grid(extent, pos.shape[0], rcut, bins_per_atom)
    return sort_into_bins(pos, lo, edge, dims, rcut)


def bin_grid(extent: Sequence[float], nall: int, rcut: float, bins_per_atom: float = 2.0) -> tuple[float, list[int]]:
    """The bins' edge and their count per direction for atoms spanning extent (3,) (see `bin_atoms`)."""
    sparse_edge = (math.prod(e + rcut for e in extent) / (bins_per_atom * nall + 64)) ** (1 / 3)
    edge = max(rcut / _BINS_PER_RCUT, sparse_edge) * (1 + _EDGE_SLACK)
    return edge, [int(e // edge) + 1 for e in extent]


def sort_into_bins(pos: Tensor, lo: Tensor, edge: float, dims: Sequence[int], rcut: float,
                   padding: Tensor | None = None) -> Bins:
    """Atoms at pos (nall, 3) float64 sorted into the bins of the given edge and dims from the corner lo (3,), no
    host sync; padding (nall,) bool: atoms put in a bin past the last, which no walk visits."""
    cell = torch.minimum(torch.floor((pos - lo) / edge).long(), _top(tuple(dims), pos.device))
    bin_id = (cell[:, 2] * dims[1] + cell[:, 1]) * dims[0] + cell[:, 0]
    if padding is not None:
        bin_id = torch.where(padding, math.prod(dims), bin_id)
    sorted_id, order = torch.sort(bin_id, stable=True)
    # each bin's run in the sorted ids (a `bincount` on a GPU reads its size back: a host sync)
    edges = torch.searchsorted(sorted_id, torch.arange(math.prod(dims) + 1, device=pos.device))
    start = edges[:-1]
    return Bins(order, start, edges[1:] - start, cell, list(dims), math.ceil(rcut / edge))


@functools.lru_cache(maxsize=64)
def _top(dims: tuple[int, ...], device: torch.device) -> Tensor:
    """The last bin's coordinates on the device, made once (no copy from the host inside a CUDA-graph capture)."""
    return (torch.tensor(dims) - 1).to(device, non_blocking=True)  # no wait for the GPU's queue


def bin_runs(bins: Bins, nloc: int) -> tuple[Tensor, Tensor]:
    """Candidate ranges of the first nloc atoms (the centres): for every (y, z) bin row within reach, the contiguous
    run of bins from x - reach to x + reach in the sorted order -> seg_start, seg_len (nloc, (2 reach + 1)^2) int64."""
    nx, ny, nz = bins.dims
    steps = torch.arange(-bins.reach, bins.reach + 1, device=bins.cell.device)
    dy, dz = torch.meshgrid(steps, steps, indexing="ij")
    cell = bins.cell[:nloc]  # (nloc, 3)
    y = cell[:, 1:2] + dy.reshape(1, -1)
    z = cell[:, 2:3] + dz.reshape(1, -1)
    inside = (y >= 0) & (y < ny) & (z >= 0) & (z < nz)
    row = (z.clamp(0, nz - 1) * ny + y.clamp(0, ny - 1)) * nx  # clamped only to index safely; `inside` masks
    first = row + (cell[:, 0:1] - bins.reach).clamp(min=0)
    last = row + (cell[:, 0:1] + bins.reach).clamp(max=nx - 1)
    seg_start = bins.start[first]
    seg_len = torch.where(inside, bins.start[last] + bins.count[last] - seg_start, 0)
    return seg_start, seg_len


def _candidate_pairs(seg_start: Tensor, seg_len: Tensor, total: int) -> tuple[Tensor, Tensor]:
    """Flatten the segments of C centres into pairs: -> row (total,) centre row in the chunk, at (total,) position
    in the bin-sorted atom order. Ragged, so no padding to the fullest bin."""
    nseg = seg_len.shape[1]
    lens = seg_len.reshape(-1)
    seg = torch.repeat_interleave(torch.arange(lens.shape[0], device=lens.device), lens, output_size=total)
    first = torch.cumsum(lens, 0) - lens
    at = seg_start.reshape(-1)[seg] + torch.arange(total, device=lens.device) - first[seg]
    return seg // nseg, at


@functools.cache  # asked at every build: the answer is made once per device
def gpu_kernels(device: torch.device) -> bool:
    """Whether the lists' Triton twins run on this device: a CUDA device, with Triton installed (on a CPU the
    PyTorch twins run; the tests run the kernels there under Triton's interpreter explicitly)."""
    from deeppot.kernels import embedding

    return device.type == "cuda" and embedding.triton_available(device)


def _pair_rows_on(device: torch.device):
    """`pair_rows`, or on a CUDA device with Triton its one-kernel twin (`deeppot.kernels.cell_pairs`: the same
    neighbours in the same order, 79 million candidate pairs never stored for 98,304 water atoms at rcut 8)."""
    if gpu_kernels(device):
        from deeppot.kernels.cell_pairs import pair_rows as kernel

        return kernel
    return pair_rows


def pair_rows(pos: Tensor, pos_sorted: Tensor, type_sorted: Tensor, order: Tensor, seg_start: Tensor,
              seg_len: Tensor, offset: int, rcut: float) -> Tensor:
    """Each centre's neighbours within rcut among its candidates, in candidate order: (ncentre, kmax) extended
    indices, -1 padded (kmax: the fullest row).

    pos (nall, 3); pos_sorted, type_sorted, order (nall,) in bin order; centres offset..offset+ncentre-1 with their
    candidate runs seg_start, seg_len (ncentre, nseg) from `bin_runs`. Self pairs and atoms of type < 0 are no
    neighbours.
    """
    ncentre = seg_start.shape[0]
    row, at = _candidate_pairs(seg_start, seg_len, int(seg_len.sum()))
    centre = row + offset
    j = order[at]
    keep = ((distance(pos[centre], pos_sorted[at]) <= rcut) & (j != centre) & (type_sorted[at] >= 0)).nonzero()
    row, j = row[keep[:, 0]], j[keep[:, 0]]
    # Pack the kept pairs (already grouped by row) into rows.
    per_row = torch.bincount(row, minlength=ncentre)
    kmax = int(per_row.max()) if ncentre else 0
    col = torch.arange(row.shape[0], device=row.device) - (torch.cumsum(per_row, 0) - per_row)[row]
    return j.new_full((ncentre, kmax), -1).index_put_((row, col), j)


def _select_rows(pos: Tensor, ext_atype: Tensor, offset: int, rows: Tensor, rcut: float, sel: Sequence[int]
                 ) -> tuple[Tensor, Tensor]:
    """The rows of `pair_rows` measured with `distance` (the one expression of every builder), cut at rcut exactly
    and selected: nlist (ncentre, nnei), count (ncentre, ntypes)."""
    j = rows.clamp(min=0)
    rr = distance(pos[offset:offset + rows.shape[0], None, :], pos[j])
    keep = (rows >= 0) & (rr <= rcut)
    t_rows = ext_atype[j].masked_fill(~keep, -1)
    return select_neighbors(rr.masked_fill(~keep, float("inf")), rows.masked_fill(~keep, -1), t_rows, rcut, sel)


def pad_frames(frames: list[tuple[Tensor, Tensor, Tensor]], rcut: float) -> tuple[Tensor, Tensor, Tensor]:
    """Stack per-frame (nall_f, 3), (nall_f,), (nall_f,) to a common nall; padding atoms have type -1, mapping 0
    and sit beyond rcut of every real atom (so even a type-blind consumer never pairs them)."""
    nall = max(fr[0].shape[0] for fr in frames)
    coords, types, maps = [], [], []
    for ext_coord, ext_atype, mapping in frames:
        npad = nall - ext_coord.shape[0]
        far = ext_coord.detach().amax(dim=0) + 2 * rcut
        coords.append(torch.cat([ext_coord, far.expand(npad, 3)]))
        types.append(torch.cat([ext_atype, ext_atype.new_full((npad,), -1)]))
        maps.append(torch.cat([mapping, mapping.new_zeros(npad)]))
    return torch.stack(coords), torch.stack(types), torch.stack(maps)
