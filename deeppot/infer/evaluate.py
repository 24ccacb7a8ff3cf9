"""Evaluation at scale: energy, forces and virial of many atoms with memory linear in the atom count.

The training path keeps every per-slot intermediate (G and dG/ds of every neighbour, the pair virials: ~100 KB an
atom for water), which is right for a 192-atom batch and fatal at 10^5 atoms. Here the frames of a batch are
flattened into one list of centres (the extended atoms of frame f shifted by f * nall) and the centres are
evaluated in chunks: each chunk adds its forces (centre and neighbour sides) and virials into arrays of the whole
batch, so only one chunk's intermediates exist at a time.

A pair stage computes a chunk's atomic energies and g = dE/dr_ij (n, nnei, 3):
- `reference_pair_stage`: the model's own PyTorch path (hand-written derivative, or autograd), any model;
- `deeppot.kernels.descriptor.fused_pair_stage`: two fused Triton kernels that never store G, on a GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from deeppot.model import EnergyModel, analytic
from deeppot.model.energy_model import type_groups

# (model, rij, nlist_loc, center_type, neighbor_type[, type_rows=...]) -> (atomic energies, dE/dr_ij)
PairStage = Callable[..., tuple[Tensor, Tensor]]
# (force, virial, g, rij, nlist_loc, start): adds a chunk's forces and per-centre virials (no per-atom virial)
Scatter = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor, int], None]
# (flat, start, stop, rcut, dtype) -> r_ij (float64 or dtype), neighbour owner and type of a chunk's centres
Pairs = Callable[["FlatNeighbors", int, int, float, torch.dtype], tuple[Tensor, Tensor, Tensor]]


@dataclass
class FlatNeighbors:
    """The neighbour data of nf frames as one list of ncentre = nf * nloc centres.

    ext_coord (nf * nall, 3); ext_atype (nf * nall,); nlist (ncentre, nnei) int64 indices into ext_coord, -1 padded;
    owner (nf * nall,) int64: the centre each extended atom is an image of; center_type (ncentre,) int64.
    Centre c is local atom c % nloc of frame c // nloc, and extended atom (c // nloc) * nall + c % nloc.
    type_rows: the centres of each type per chunk (`rows_by_type`), made on first use and kept, so that evaluating
    this data again needs no host sync for them; flats whose centres have the same types may share it (an MD run's
    neighbour data, rebuilt every step for the same atoms). orders: its `deeppot.infer.order.CentreOrder`s, kept
    likewise (an MD run's steps share them until the list's next build).
    """

    ext_coord: Tensor
    ext_atype: Tensor
    nlist: Tensor
    owner: Tensor
    center_type: Tensor
    nf: int
    nloc: int
    type_rows: dict[tuple[int, int, int], list[Tensor]] = field(default_factory=dict)
    orders: dict = field(default_factory=dict)

    @classmethod
    def from_frames(cls, ext_coord: Tensor, ext_atype: Tensor, nlist: Tensor, mapping: Tensor,
                    type_rows: dict | None = None, orders: dict | None = None) -> FlatNeighbors:
        """From DeePMD-layout neighbour data: ext_coord (nf, nall, 3), ext_atype (nf, nall), nlist (nf, nloc, nnei),
        mapping (nf, nall); type_rows: another flat's, of centres of the same types; orders: another flat's, of the
        same extended atoms (an MD step's since the list's last build)."""
        nf, nall = ext_atype.shape
        nloc = nlist.shape[1]
        if nf == 1:  # no offsets: a pass over the list fewer (~0.2 ms at 98,304 water atoms, run 220)
            flat_nlist, owner = nlist, mapping
        else:
            frame = torch.arange(nf, device=nlist.device)
            flat_nlist = torch.where(nlist >= 0, nlist + (frame * nall)[:, None, None], -1)
            owner = mapping + (frame * nloc)[:, None]
        return cls(ext_coord.reshape(nf * nall, 3), ext_atype.reshape(-1), flat_nlist.reshape(nf * nloc, -1),
                   owner.reshape(-1), ext_atype[:, :nloc].clamp(min=0).reshape(-1), nf, nloc,
                   {} if type_rows is None else type_rows, {} if orders is None else orders)

    @property
    def ncentre(self) -> int:
        return self.nlist.shape[0]

    def rows_by_type(self, start: int, stop: int, ntypes: int) -> list[Tensor]:
        """Per type 0..ntypes-1, the indices among centres start..stop-1 of its centres (made once: a host sync)."""
        key = (start, stop, ntypes)
        if key not in self.type_rows:
            if self.center_type.is_cuda and torch.cuda.is_current_stream_capturing():
                raise RuntimeError("the centres of each type must be found before a CUDA-graph capture (a host "
                                   "sync): evaluate this neighbour data, or one that shares its type_rows, first")
            self.type_rows[key] = type_groups(self.center_type[start:stop], ntypes)
        return self.type_rows[key]

    def find_type_rows(self, center_type: Tensor, chunk_atoms: int, ntypes: int) -> None:
        """Make `rows_by_type` for every chunk of `evaluate_flat`, sized from the centres' types on the host
        (ncentre,), the types the frames came with: no host sync (`type_groups` on the device alone reads its
        counts back, after the list build's work is queued)."""
        types = center_type.numpy()
        for start, stop in chunks(self.ncentre, chunk_atoms):
            part = types[start:stop]
            counts = [0, *(int(np.count_nonzero(of_centre_type(part, t))) for t in range(ntypes))]
            self.type_rows[(start, stop, ntypes)] = type_groups(self.center_type[start:stop], ntypes, counts)

    def self_index(self, start: int, stop: int, centres: Tensor | None = None) -> Tensor:
        """Extended index of centres start..stop-1, or of `centres` (centre indices) where given."""
        if centres is None:
            centres = torch.arange(start, stop, device=self.nlist.device)
        nall = self.ext_coord.shape[0] // self.nf
        return (centres // self.nloc) * nall + centres % self.nloc

    def pair_vectors(self, start: int, stop: int, rcut: float, centres: Tensor | None = None) -> Tensor:
        """r_ij = x_J - x_i (n, nnei, 3) of centres start..stop-1 (row i of centres[i] where given); padded slots get
        a dummy vector beyond rcut, so their switch weight and every derivative is exactly zero (as
        `deeppot.model.env_mat.neighbor_vectors`)."""
        nlist = self.nlist[start:stop] if centres is None else self.nlist[centres]
        rij = self.ext_coord[nlist.clamp(min=0)] - self.ext_coord[self.self_index(start, stop, centres)][:, None, :]
        return torch.where((nlist >= 0)[..., None], rij, torch.full_like(rij, rcut))

    def neighbor_owner_and_type(self, start: int, stop: int, centres: Tensor | None = None,
                                owner: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Centre index and type of every neighbour slot (n, nnei) of centres start..stop-1 (row i of centres[i]
        where given); -1 for padding. owner: each extended atom's centre as the caller numbers them (default
        `self.owner`)."""
        nlist = self.nlist[start:stop] if centres is None else self.nlist[centres]
        owner = self.owner if owner is None else owner
        j = nlist.clamp(min=0)
        return torch.where(nlist >= 0, owner[j], -1), torch.where(nlist >= 0, self.ext_atype[j], -1)


def of_centre_type(types: np.ndarray, t: int) -> np.ndarray:
    """Which of these host types (an atom's type in its frame) are centres of type t: virtual atoms (type < 0) are
    centres of type 0, as `FlatNeighbors.center_type` has them."""
    return types <= 0 if t == 0 else types == t


def chunks(n: int, chunk_atoms: int) -> Iterator[tuple[int, int]]:
    """(start, stop) of each chunk of `evaluate_flat`: n centres in the fewest chunks of at most chunk_atoms, of
    equal sizes (to one): a last chunk of a few atoms would pay a whole chunk's launches and fixed costs for them
    (108,000 copper atoms on a budget of 104,857 were chunks of 104,857 and 3,143)."""
    count = -(-n // chunk_atoms)
    return ((i * n // count, (i + 1) * n // count) for i in range(count))


def reference_pair_data(flat: FlatNeighbors, start: int, stop: int, rcut: float, dtype: torch.dtype, order=None
                        ) -> tuple[Tensor, Tensor, Tensor]:
    """A chunk's pair data in PyTorch: r_ij in float64 (whatever dtype), neighbour owner and type; with a
    `deeppot.infer.order.CentreOrder`, of its positions start..stop-1 (row i: centre order[start + i]), each
    neighbour's owner as its position."""
    centres, owner = (None, None) if order is None else (order.order[start:stop], order.owner)
    return flat.pair_vectors(start, stop, rcut, centres), *flat.neighbor_owner_and_type(start, stop, centres, owner)


def reference_pair_stage(model: EnergyModel, rij: Tensor, nlist_loc: Tensor, center_type: Tensor,
                         neighbor_type: Tensor, type_rows: list[Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """Atomic energies (n,) float64 and g = dE/dr_ij (n, nnei, 3) of one chunk through the model's PyTorch path
    (type_rows, the centres of each type, are not needed: the model's fitting selects each atom's net by mask)."""
    args = rij[None], nlist_loc[None], center_type[None], neighbor_type[None]
    if model.analytic_forces and analytic.supports(model):
        with torch.no_grad():
            energy, g = analytic.energy_and_pair_grad(model, *args)
        return energy[0], g[0]
    from deeppot.model import PairData

    rij_g = args[0].detach().requires_grad_(True)
    with torch.enable_grad():
        energy = model.atomic_energy_from_pairs(PairData(rij_g, *args[1:]), rij_g)
        (g,) = torch.autograd.grad(energy.sum(), rij_g)
    return energy.detach()[0], g[0]


def evaluate_flat(model: EnergyModel, flat: FlatNeighbors, chunk_atoms: int, pair_stage: PairStage,
                  atomic: bool = False, scatter: Scatter | None = None, pairs: Pairs = reference_pair_data,
                  by_type: bool = False, stage_scatters: bool = False, order=None) -> dict[str, Tensor]:
    """Energy (nf,), atom_energy (nf, nloc), force (nf, nloc, 3), virial (nf, 9) [, atom_virial (nf, nloc, 9)],
    all float64, evaluating `chunk_atoms` centres at a time through `pair_stage`.

    The virial of each pair goes to its centre (one small contraction per centre) unless `atomic` asks for
    DeePMD's per-atom virial, which gives each pair's share to the neighbour atom (spec §6.3). `scatter` replaces
    `add_forces_and_virial` when not `atomic` (the fused kernel of `deeppot.kernels.scatter`); `pairs` gives each
    chunk's pair data (`reference_pair_data`, or the kernel of `deeppot.kernels.pairs`, whose r_ij in the model's
    precision then also goes to the virial). by_type: the pair stage takes each chunk's centres of each type
    (keyword `type_rows`, `FlatNeighbors.rows_by_type`), as the fused stages do to run each fitting net on its
    own type's atoms. stage_scatters: the pair stage takes `scatter_into` (force, virial, nlist_loc, start) and
    adds the forces and per-centre virials itself where it returns no dE/dr_ij (the fused stages: without `atomic`).
    order: a `deeppot.infer.order.CentreOrder` of flat, in which the chunks take the centres (`pairs` takes it too).
    """
    n, device = flat.ncentre, flat.nlist.device
    atom_energy = torch.empty(n, dtype=torch.float64, device=device)
    force = torch.zeros(n, 3, dtype=torch.float64, device=device)
    virial = torch.zeros(n, 9, dtype=torch.float64, device=device)
    by_type, ntypes = by_type and model.descriptor.ntypes > 1, model.descriptor.ntypes
    center_type, ordered = (flat.center_type, {}) if order is None else (order.center_type, {"order": order})
    for start, stop in chunks(n, chunk_atoms):
        rij, nlist_loc, neighbor_type = pairs(flat, start, stop, model.rcut, model.descriptor.dtype, **ordered)
        extra = {}  # the stage's keyword arguments
        if by_type:
            key = (start, stop, ntypes)
            extra["type_rows"] = flat.rows_by_type(*key) if order is None else order.type_rows[key]
        if stage_scatters and not atomic:
            extra["scatter_into"] = (force, virial, nlist_loc, start)
        energy, g = pair_stage(model, rij.to(model.descriptor.dtype), nlist_loc, center_type[start:stop],
                               neighbor_type, **extra)
        atom_energy[start:stop] = energy
        if g is None:  # added by the stage
            continue
        if scatter is None or atomic:
            add_forces_and_virial(force, virial, g, rij, nlist_loc, start, atomic)
        else:
            scatter(force, virial, g, rij, nlist_loc, start)
    if order is not None:  # each centre's row back from its position
        atom_energy, force, virial = (x[order.inverse] for x in (atom_energy, force, virial))
    return frame_outputs(atom_energy, force, virial, flat.nf, flat.nloc, atomic)


def frame_outputs(atom_energy: Tensor, force: Tensor, virial: Tensor, nf: int, nloc: int,
                  atomic: bool = False) -> dict[str, Tensor]:
    """Per-centre arrays (..., ncentre[, k]) as the outputs per frame: energy (..., nf), atom_energy (..., nf, nloc),
    force (..., nf, nloc, 3), virial (..., nf, 9) [, atom_virial (..., nf, nloc, 9)]; a leading axis (the models
    of an ensemble) is kept."""
    lead = atom_energy.shape[:-1]
    atom_energy = atom_energy.reshape(*lead, nf, nloc)
    out = {"energy": atom_energy.sum(-1), "atom_energy": atom_energy, "force": force.reshape(*lead, nf, nloc, 3),
           "virial": virial.reshape(*lead, nf, nloc, 9).sum(-2)}
    if atomic:
        out["atom_virial"] = virial.reshape(*lead, nf, nloc, 9)
    return out


def add_forces_and_virial(force: Tensor, virial: Tensor, g: Tensor, rij: Tensor, nlist_loc: Tensor, start: int,
                          atomic: bool) -> None:
    """F_i += sum_j g_ij, F_owner(J) -= g_ij; virial -= g_ij (x) r_ij (to the centre, or to J if atomic).

    force (..., ncentre, 3), virial (..., ncentre, 9), g (..., n, nnei, 3): the leading axes (the models of an
    ensemble, `deeppot.infer.ensemble`) share rij and nlist_loc (n, nnei[, 3]).
    Padded slots have g = 0 exactly, so they are added to atom 0 harmlessly (no boolean indexing, no host sync).
    """
    n, lead = g.shape[-3], g.shape[:-3]
    g, rij = g.to(torch.float64), rij.to(torch.float64)
    owners = nlist_loc.clamp(min=0).reshape(-1)
    force[..., start:start + n, :] += g.sum(dim=-2)
    force.index_add_(-2, owners, -g.reshape(*lead, -1, 3))
    if atomic:
        pair_virial = -(g[..., :, None] * rij[..., None, :]).reshape(*lead, -1, 9)
        virial.index_add_(-2, owners, pair_virial)
    else:
        virial[..., start:start + n, :] -= torch.einsum("...njc,njd->...ncd", g, rij).reshape(*lead, n, 9)
