"""Fused Triton kernels for inference: the se_e2_a descriptor and its derivative without storing G.

The training path keeps G and dG/ds for every neighbour slot (2 x nnei x M1 numbers an atom, ~110 KB for water
in float32): affordable for a 192-atom batch, not for 10^6 atoms. Inference needs G only inside two contractions,
so two kernels recompute the embedding net per chunk of slots and contract it at once:

- `descriptor_t`: T_i = sum_j R_ij^T G(s_ij) / nnei (nloc, 4, M1), from the pair vectors; the twin of
  `analytic.env_rows` + `analytic.embed_all` + the contraction in `analytic.energy_and_pair_grad`.
- `pair_grad_from_t_bar`: dE/dr_ij (nloc, nnei, 3) from dE/dT; the twin of `analytic.pair_grad`.

Between them, `fused_pair_stage` runs the fitting nets (per-atom work, no slots:
`deeppot.kernels.fitting_stack.value_and_input_grad`), with D = T^T T< and dE/dT from
`deeppot.kernels.descriptor_matrix`. In the kernels here one program handles one centre atom: for each
neighbour-type block it loads that block's net (net b, or net (t_i, b) when two-sided) and walks the block's slots
in chunks of BLOCK rows. Where measured faster, the atom-tile kernels of `deeppot.kernels.atom_tiles` run instead
(several atoms a program; 98,304 water atoms on an H100: both float32 kernels, 16% faster, runs 40-41; the float64 T
kernel, 28% faster, run 45). The layer helpers (padded register layouts, DeePMD's skips, tensor-core GEMMs: 3xTF32
or three float16 products (`embedding._mm`) for float32, float64 GEMMs for float64) are the training kernels'; the
environment rows are `env_rows`'.
Tests: tests/kernels/test_descriptor.py (GPU, or Triton's interpreter on a CPU) and tests/gpu.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from deeppot.kernels import atom_tiles, descriptor_matrix, embedding, fitting_stack
from deeppot.kernels.env_rows import net_args
from deeppot.kernels.reach import Reach, add_tail, excluded_as_padding, find_reach, tile_tops
from deeppot.model import analytic
from deeppot.model.energy_model import type_groups

# Slots per chunk (the GEMM M dimension) and warps of each kernel, measured fastest on an H100 (water, 1e4-1e5 atoms;
# benchmarks/results/README.md): 32 x 4 for the T kernel, 16 x 4 for the gradient kernel (its jets need registers).
TILES = {"t": (32, 4), "grad": (16, 4)}
# Whether the atom-tile T kernel also writes D for the fitting nets (`desc_rows`, `atom_tiles.descriptor_t`), after
# it adds the tail itself, instead of `descriptor_matrix`'s kernel reading T back.
D_IN_T_KERNEL = True
# The same for the compressed T kernel (`compressed.compressed_descriptor_t`).
D_IN_T_KERNEL_COMPRESSED = True
# Whether a stage given `scatter_into` adds the forces and virials from its gradient kernel's dE/dR_ij in one kernel
# (`scatter.back_and_scatter`), where `env_rows.back_to_pairs` wrote dE/dr_ij and `scatter` read it back.
SCATTER_IN_STAGE = True
# Whether dE/dT of a type's atoms comes straight from its fitting net's first-layer gradient (float16 parts and
# W1^T's, `descriptor_matrix.t_bar_from_fitting_grad`), where cuBLAS wrote dE/dD (0.63 GB at 98,304 water atoms,
# 0.35 ms) and the dE/dT kernel read it back (0.37 ms, run 270); not sync_free (every net on every atom). Prepared
# in run 270, not yet timed on a GPU: off.
T_BAR_FROM_FITTING_GRAD = False

if embedding.triton is not None:
    import triton
    import triton.language as tl

    from deeppot.kernels.activation import _tanh
    from deeppot.kernels.embedding import _columns, _dense_jet, _mm, _net_weights
    from deeppot.kernels.env_rows import _dense, _env_row_grad, _env_rows, _store_pair_grad, _t_bar_rows

    @triton.jit
    def _descriptor_t_kernel(rij_ptr, type_ptr, stat_ptr, geo_ptr, starts_ptr, top_ptr, w1_ptr, b1_ptr, w2_ptr,
                             b2_ptr, w3_ptr, b3_ptr, t_ptr, nnei, nstat,
                             N1: tl.constexpr, N2: tl.constexpr, N3: tl.constexpr, L1: tl.constexpr,
                             L2: tl.constexpr, L3: tl.constexpr, SKIP2: tl.constexpr, SKIP3: tl.constexpr,
                             NTYPES: tl.constexpr, ONE_SIDE: tl.constexpr, BLOCK: tl.constexpr,
                             MAX_SEL: tl.constexpr, PRECISION: tl.constexpr):
        centre = tl.program_id(0).to(tl.int64)
        ctype = tl.load(type_ptr + centre)
        col, col_ok = _columns(L3[0], L3[1], L3[2])
        # T (4 x M1) accumulates as rows 0-3 of a 16-row GEMM, R^T (16 x BLOCK, rows 4-15 zero) @ G: tensor
        # cores instead of a cross-warp column reduction per chunk
        four = tl.arange(0, 16)[:, None]
        acc = (four + col[None, :] * 0).to(rij_ptr.dtype.element_ty) * 0.0
        for b in range(NTYPES):
            k = b if ONE_SIDE else ctype + b * NTYPES
            start = tl.load(starts_ptr + b)
            top = tl.load(top_ptr + centre * NTYPES + b)  # the slots to visit (`deeppot.kernels.reach`)
            w1, b1, w2, b2, w3, b3 = _net_weights(w1_ptr, b1_ptr, w2_ptr, b2_ptr, w3_ptr, b3_ptr, k, N1, N2, N3,
                                                  L1, L2, L3, PRECISION)
            for j0 in range(0, MAX_SEL, BLOCK):
                if j0 < top:
                    rows = j0 + tl.arange(0, BLOCK)
                    live = rows < top
                    slot = start + rows
                    s, rx, ry, rz = _env_rows(rij_ptr, stat_ptr, geo_ptr, centre, ctype, slot, live, nnei, nstat)[:4]
                    g = _tanh(s[:, None] * w1[None, :] + b1[None, :])
                    g = _dense(_dense(g, w2, b2, SKIP2, PRECISION), w3, b3, SKIP3, PRECISION)
                    rt = tl.where(four == 0, s[None, :], tl.where(four == 1, rx[None, :], tl.where(
                        four == 2, ry[None, :], tl.where(four == 3, rz[None, :], 0.0))))
                    acc += _mm(rt, g, PRECISION)
        out = t_ptr + centre * 4 * N3 + col
        for c in tl.static_range(4):
            tl.store(out + c * N3, tl.sum(tl.where(four == c, acc, 0.0), axis=0) * tl.load(geo_ptr + 3), mask=col_ok)

    @triton.jit
    def _pair_grad_kernel(rij_ptr, type_ptr, stat_ptr, geo_ptr, starts_ptr, top_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr,
                          w3_ptr, b3_ptr, tbar_ptr, grad_ptr, nnei, nstat,
                          N1: tl.constexpr, N2: tl.constexpr, N3: tl.constexpr, L1: tl.constexpr,
                          L2: tl.constexpr, L3: tl.constexpr, SKIP2: tl.constexpr, SKIP3: tl.constexpr,
                          NTYPES: tl.constexpr, ONE_SIDE: tl.constexpr, BLOCK: tl.constexpr,
                          MAX_SEL: tl.constexpr, PRECISION: tl.constexpr):
        # tb_c: row c of the centre's t_bar / nnei (`_t_bar_rows`), as `_env_row_grad` takes it
        centre = tl.program_id(0).to(tl.int64)
        ctype = tl.load(type_ptr + centre)
        col, col_ok = _columns(L3[0], L3[1], L3[2])
        tb0, tb1, tb2, tb3 = _t_bar_rows(tbar_ptr, centre, nnei, col, col_ok, N3)
        for b in range(NTYPES):
            k = b if ONE_SIDE else ctype + b * NTYPES
            start = tl.load(starts_ptr + b)
            top = tl.load(top_ptr + centre * NTYPES + b)  # the slots to visit (`deeppot.kernels.reach`)
            w1, b1, w2, b2, w3, b3 = _net_weights(w1_ptr, b1_ptr, w2_ptr, b2_ptr, w3_ptr, b3_ptr, k, N1, N2, N3,
                                                  L1, L2, L3, PRECISION)
            for j0 in range(0, MAX_SEL, BLOCK):
                if j0 < top:
                    rows = j0 + tl.arange(0, BLOCK)
                    live = rows < top
                    slot = start + rows
                    s, rx, ry, rz, x, y, z, inv, w, dw, st = _env_rows(rij_ptr, stat_ptr, geo_ptr, centre, ctype,
                                                                         slot, live, nnei, nstat)
                    g = _tanh(s[:, None] * w1[None, :] + b1[None, :])
                    dg = (1.0 - g * g) * w1[None, :]
                    g, dg = _dense_jet(g, dg, w2, b2, SKIP2, PRECISION)[3:]
                    g, dg = _dense_jet(g, dg, w3, b3, SKIP3, PRECISION)[3:]
                    q0, q1, q2, q3 = _env_row_grad(g, dg, s, rx, ry, rz, tb0, tb1, tb2, tb3)
                    _store_pair_grad(grad_ptr, stat_ptr, st, centre, slot, live, nnei, nstat, x, y, z, inv, w, dw,
                                     q0, q1, q2, q3)


def unfusable_reason(model, device: torch.device) -> str | None:
    """Why the fused inference kernels cannot evaluate `model` on `device`, or None when they can."""
    d = model.descriptor
    if not embedding.triton_available(device):
        return "they need Triton and a CUDA device (or TRITON_INTERPRET=1 on a CPU)"
    if not embedding.fusable(d):
        return "the embedding nets are not 3-layer tanh nets without resnet_dt"
    if not analytic.supports(model):
        return f"the fitting activation {model.fitting.activation_function!r} has no hand-written derivative"
    if d.dtype not in (torch.float32, torch.float64):
        return f"descriptor precision {d.dtype}"
    return None


def _launch_args(d, rij: Tensor, center_type: Tensor, precision: str, kernel: str, reach: Reach | None
                 ) -> tuple[list, dict, Tensor]:
    """Tensor arguments shared by both kernels, their compile-time constants and the reach they walk."""
    tops = tile_tops(d, reach, center_type, 1, 0)
    tensors, meta = net_args(d, rij, center_type, precision, tops)
    block, warps = TILES[kernel]
    meta.update(BLOCK=block, num_warps=warps)
    return tensors, meta, tops


def descriptor_t(d, rij: Tensor, center_type: Tensor, precision: str = "tf32x3", reach: Reach | None = None,
                 rows: Tensor | None = None, desc: tuple[Tensor, Tensor | None] | None = None) -> Tensor:
    """T_i = sum_j R_ij^T G(s_ij) / nnei, (n, 4, M1), from pair vectors rij (n, nnei, 3) in the descriptor
    precision (padded slots: a vector beyond rcut) and centre types (n,): by the atom-tile kernel where it has
    a measured tile for the precision, else by the one-atom kernel. With `reach` (`deeppot.kernels.reach`) the
    kernels skip the padding after each program's furthest neighbour and add what it would have added. `rows`:
    the atom tiles' `shared_rows`, if made; `desc`: where the atom tiles also write D (`desc_rows`)."""
    if atom_tiles.covers(rij.dtype, "t"):
        return atom_tiles.descriptor_t(d, rij, center_type, precision, reach, rows, desc)
    assert desc is None, "only the atom tiles write D"
    return one_atom_t(d, rij, center_type, precision, reach)


def pair_grad_from_t_bar(d, rij: Tensor, center_type: Tensor, t_bar: Tensor, precision: str = "tf32x3",
                         reach: Reach | None = None, rows: Tensor | None = None, into: tuple | None = None,
                         tile: tuple | None = None) -> Tensor | None:
    """dE/dr_ij (n, nnei, 3) from dE/dT (n, 4, M1), T as in `descriptor_t` (atom tiles where measured faster);
    zero on the slots skipped. `into`: (force, virial, owner, start), where the atom tiles add the forces and
    virials themselves (None returned then; the one-atom kernel returns dE/dr_ij whatever `into`); tile: the atom
    tiles' (ATOMS, SLOTS, warps) if not their default (`atom_tiles.gradient_tile`)."""
    if atom_tiles.covers(rij.dtype, "grad"):
        return atom_tiles.pair_grad_from_t_bar(d, rij, center_type, t_bar, precision, reach, rows, into, tile)
    return one_atom_pair_grad(d, rij, center_type, t_bar, precision, reach)


def one_atom_t(d, rij: Tensor, center_type: Tensor, precision: str = "tf32x3", reach: Reach | None = None
               ) -> Tensor:
    """`descriptor_t` by the one-atom kernel."""
    tensors, meta, tops = _launch_args(d, rij, center_type, precision, "t", reach)
    n, nnei = rij.shape[:2]
    t_mat = rij.new_empty(n, 4, meta["N3"])
    _descriptor_t_kernel[(n,)](*tensors, t_mat, nnei, d.davg.numel(), **meta)
    if reach is not None:
        add_tail(d, t_mat, center_type, tops, 1, 0, reach.last)
    return t_mat


def one_atom_pair_grad(d, rij: Tensor, center_type: Tensor, t_bar: Tensor, precision: str = "tf32x3",
                       reach: Reach | None = None) -> Tensor:
    """`pair_grad_from_t_bar` by the one-atom kernel."""
    tensors, meta, _ = _launch_args(d, rij, center_type, precision, "grad", reach)
    n, nnei = rij.shape[:2]
    grad = torch.zeros_like(rij)  # slots past the reach are not visited
    t_bar = t_bar.contiguous()
    _pair_grad_kernel[(n,)](*tensors, t_bar, grad, nnei, d.davg.numel(), **meta)
    return grad


def fused_pair_stage(model, rij: Tensor, nlist_loc: Tensor, center_type: Tensor, neighbor_type: Tensor,
                     precision: str = "tf32x3", sync_free: bool = False, type_rows: list[Tensor] | None = None,
                     scatter_into: tuple | None = None, grad_tile: tuple | None = None) -> tuple[Tensor, Tensor | None]:
    """Atomic energies (n,) float64 and dE/dr_ij (n, nnei, 3): the `deeppot.infer.evaluate` pair stage; with
    `scatter_into` (force, virial, owner, start: `evaluate_flat`'s) the forces and per-centre virials are added
    there (`deeppot.kernels.scatter.back_and_scatter`) and dE/dr_ij is None, where the atom tiles run.

    The fitting nets run on their own type's atoms, by the index lists `type_rows` (per type, its centres among
    these; made here when not given: a host sync), or with `sync_free` every net on every atom (for CUDA graphs).
    precision of the float32 products (embedding nets and fitting nets): "f16x3" or "tf32x3" (float32-level
    accuracy, `deeppot.kernels.precision`) or the mixed-precision opt-in "tf32". grad_tile: the gradient kernel's
    atom tile, if not the default (`atom_tiles.gradient_tile`).
    """
    return two_kernel_stage(model, rij, center_type, neighbor_type, sync_free,
                            functools.partial(descriptor_t, precision=precision),
                            functools.partial(pair_grad_from_t_bar, precision=precision, tile=grad_tile), precision,
                            functools.partial(atom_tiles.shared_rows, precision=precision, grad_tile=grad_tile),
                            type_rows,
                            desc_in_t=atom_tiles.covers(rij.dtype, "t") and D_IN_T_KERNEL, scatter_into=scatter_into)


def two_kernel_stage(model, rij: Tensor, center_type: Tensor, neighbor_type: Tensor, sync_free: bool,
                     t_kernel, grad_kernel, precision: str = "tf32x3", shared=None,
                     type_rows: list[Tensor] | None = None, desc_in_t: bool = False,
                     scatter_into: tuple | None = None) -> tuple[Tensor, Tensor | None]:
    """A pair stage from its two kernels (T from the pairs; dE/dr_ij from dE/dT), shared by the uncompressed and
    compressed families: both skip the padding after each list's last neighbour (`deeppot.kernels.reach`, which
    also handles exclude_types), the fitting step between them (its float32 products at `precision`). `shared`:
    (d, rij, center_type, reach) -> keyword arguments both kernels take (what they would each make alike).
    desc_in_t: the T kernel takes `desc=` (`atom_tiles.descriptor_t`) and writes D for the fitting nets too.
    scatter_into: given to the gradient kernel as `into` (its dE/dr_ij, None where it scattered, is returned)."""
    d = model.descriptor
    reach = find_reach(d, center_type, neighbor_type)
    rij = excluded_as_padding(d, rij, center_type, neighbor_type)
    extra = shared(d, rij, center_type, reach) if shared is not None else {}
    if not (d.ntypes == 1 or sync_free) and type_rows is None:
        type_rows = type_groups(center_type, d.ntypes)  # a host sync
    desc = desc_rows(model, center_type, sync_free, type_rows) if desc_in_t else None
    t_mat = t_kernel(d, rij, center_type, reach=reach, **extra, **({} if desc is None else {"desc": desc}))
    energy, t_bar = energy_and_t_bar(model, t_mat, center_type, sync_free, precision, type_rows,
                                     None if desc is None else desc[0])
    into = {"into": scatter_into} if scatter_into is not None and SCATTER_IN_STAGE else {}
    return energy, grad_kernel(d, rij, center_type, t_bar, reach=reach, **extra, **into)


def desc_rows(model, center_type: Tensor, sync_free: bool, type_rows: list[Tensor] | None
              ) -> tuple[Tensor, Tensor | None] | None:
    """Where a T kernel writes D for `energy_and_t_bar`: (D (n, M1 m2) in the fitting's precision, pos), atom i
    at row pos[i], each type's atoms together in the order of `type_rows` (pos None: every atom at its own row,
    for one net or every net on every atom). None where the T kernel cannot add the tail itself."""
    d = model.descriptor
    if not atom_tiles.tail_in_kernel(d):
        return None
    n = len(center_type)
    desc = torch.empty(n, d.dim_out, dtype=model.fitting.dtype, device=center_type.device)
    if d.ntypes == 1 or sync_free:
        return desc, None
    order = torch.cat(type_rows)
    if len(order) != n:  # an atom of no type's list: keep the kernels that read T by index
        return None
    pos = torch.empty(n, dtype=torch.int64, device=center_type.device)
    pos[order] = torch.arange(n, device=center_type.device)
    return desc, pos


def energy_and_t_bar(model, t_mat: Tensor, center_type: Tensor, sync_free: bool, precision: str = "tf32x3",
                     type_rows: list[Tensor] | None = None, desc: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Between the two kernels of a fused stage: atomic energies (n,) float64 and dE/dT (n, 4, M1) from T, the
    fitting nets on their own type's atoms (by `type_rows`, or index lists made here: a host sync) or, sync_free,
    on every atom. D and dE/dT go through `deeppot.kernels.descriptor_matrix`, which reads and writes a type's rows
    by index; the nets through `deeppot.kernels.fitting_stack.value_and_input_grad` (`fitting_gemm`'s where the
    stack does not apply: every net on every atom of several types). desc: D already made
    (`desc_rows`' layout: each type's rows together in `type_rows` order, or every atom in its own row)."""
    d, fitting = model.descriptor, model.fitting
    fit = functools.partial(fitting_stack.value_and_input_grad, precision=precision)
    if sync_free or (d.ntypes == 1 and not T_BAR_FROM_FITTING_GRAD):
        if desc is None:
            desc = descriptor_matrix.descriptor_from_t(t_mat, d.axis_neuron, fitting.dtype)
        energy, d_desc = analytic.atomic_energy_and_grad(fitting, desc[None], center_type[None],
                                                         fit=fit)
        return energy[0], descriptor_matrix.t_bar_from_desc_grad(d_desc[0], t_mat)
    energy = torch.empty(len(t_mat), dtype=torch.float64, device=t_mat.device)
    t_bar = torch.empty_like(t_mat)  # every atom has one of the types: each row is written below
    bias = fitting.bias_atom_e + fitting.out_bias
    if type_rows is None:  # one type: its net on every atom in its own row (idx None)
        type_rows = [None] if d.ntypes == 1 else type_groups(center_type, d.ntypes)
    start = 0
    for t, idx in enumerate(type_rows):
        count = len(t_mat) if idx is None else len(idx)
        if desc is None:
            desc_t = descriptor_matrix.descriptor_from_t(t_mat, d.axis_neuron, fitting.dtype, idx)
        else:
            desc_t = desc[start:start + count]
            start += count
        value = _net_value_and_t_bar(fitting.nets, desc_t, t, t_mat, idx, t_bar, precision)
        energy[slice(None) if idx is None else idx] = value[:, 0].to(torch.float64) + bias[t]
    return energy, t_bar


def _net_value_and_t_bar(nets, desc_t: Tensor, t: int, t_mat: Tensor, idx: Tensor | None, t_bar: Tensor,
                         precision: str) -> Tensor:
    """Net t's values (rows, 1) on its atoms' D, their dE/dT into their rows idx (None: all) of t_bar: from dE/dD,
    or where `T_BAR_FROM_FITTING_GRAD` and the kernels serve, from the net's first-layer gradient without dE/dD."""
    parts = None
    if T_BAR_FROM_FITTING_GRAD and descriptor_matrix.fuses_fitting_grad(t_mat, desc_t.shape[1] // t_mat.shape[-1]):
        parts = fitting_stack.value_and_gradient_parts(nets, desc_t, t, precision)
    if parts is None:
        value, d_desc = fitting_stack.value_and_input_grad(nets, desc_t, t, precision)
        descriptor_matrix.t_bar_from_desc_grad(d_desc, t_mat, idx, t_bar)
        return value
    value, gz_parts, w_parts = parts
    descriptor_matrix.t_bar_from_fitting_grad(gz_parts, w_parts, fitting_stack.PARTS_SCALE, t_mat, idx, t_bar)
    return value
