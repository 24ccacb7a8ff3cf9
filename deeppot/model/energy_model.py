"""The se_e2_a + energy-fitting model: energy, forces and virial (spec §6, Appendix A).

The energy depends on coordinates only through the pair vectors r_ij = x_J - x_i. So the model differentiates
E with respect to r_ij once (g_ij = dE/dr_ij) and forms forces and virials by scatter-adds:
F_i += sum_j g_ij (as centre), F_owner(J) -= g_ij (as neighbour), virial = -sum g_ij (x) r_ij.
This equals differentiating with respect to the extended coordinates (spec §6.1-6.3) and needs no
extended-force array.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import torch
from torch import Tensor, nn

from deeppot.config.model import normalize_model, precision_dtype
from deeppot.model import analytic
from deeppot.model.descriptor import DescrptSeA
from deeppot.model.env_mat import neighbor_vectors
from deeppot.model.fitting import EnergyFitting, TypeRows
from deeppot.model.slots import SlotLayout


def scatter_pairs(values: Tensor, nlist_loc: Tensor, nloc: int) -> Tensor:
    """Sum per-pair values onto the local owner of each neighbour. (nf, nloc, nnei, k) -> (nf, nloc, k)."""
    nf, _, _, k = values.shape
    out = torch.zeros(nf, nloc, k, dtype=values.dtype, device=values.device)
    index = nlist_loc.clamp(min=0).reshape(nf, -1, 1).expand(-1, -1, k)
    return out.scatter_add(1, index, values.reshape(nf, -1, k))


def forces_and_virial(g: Tensor, rij: Tensor, nlist_loc: Tensor, atomic: bool = False) -> dict[str, Tensor]:
    """Forces on local atoms and the virial from g = dE/dr_ij (nf, nloc, nnei, 3), in float64."""
    g = g.to(torch.float64)
    nloc = g.shape[1]
    force = g.sum(dim=2) - scatter_pairs(g, nlist_loc, nloc)
    pair_virial = -(g[..., :, None] * rij.to(torch.float64)[..., None, :])  # (nf, nloc, nnei, 3, 3)
    out = {"force": force, "virial": pair_virial.sum(dim=(1, 2)).reshape(-1, 9)}
    if atomic:  # each pair's share goes to the neighbour atom (spec §6.3)
        out["atom_virial"] = scatter_pairs(pair_virial.reshape(*g.shape[:3], 9), nlist_loc, nloc)
    return out


class EnergyModel(nn.Module):
    def __init__(self, type_map: list[str], descriptor: DescrptSeA, fitting: EnergyFitting,
                 config: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.type_map = list(type_map)
        self.descriptor, self.fitting = descriptor, fitting
        self.config = copy.deepcopy(config) if config is not None else None
        self.register_buffer("min_nbor_dist", torch.tensor(-1.0, dtype=torch.float64))
        # forces from the hand-written first derivative (deeppot.model.analytic) instead of autograd's
        self.analytic_forces = True
        self.pair_energy_fn = analytic.energy_and_pair_grad  # a torch.compile'd twin after compile_forces()
        self.embed_fn = analytic.embed_all  # the fused Triton twin after use_fused_kernels()
        self.env_fn = analytic.env_rows  # the fused Triton twin after use_env_kernel()
        self.pair_grad_fn = analytic.pair_grad  # the fused Triton twin after use_pair_grad_kernel()
        # T and D from G, dE/dT from dE/dD: the Triton twins after use_descriptor_kernel()
        self.descriptor_fn, self.t_bar_fn = analytic.t_and_descriptor, analytic.t_bar_from_desc_grad
        # the Triton twin after use_fitting_kernel(); wrapped by training options (deeppot.train.memory)
        self.fit_fn = analytic.atomic_energy_and_grad
        self.forces_fn = forces_and_virial  # the Triton twin after use_forces_kernel()

    @classmethod
    def from_config(cls, model: dict[str, Any]) -> EnergyModel:
        """Build a model with fresh weights from the `model` section of a DeePMD-kit input.json."""
        cfg = normalize_model(model)
        desc, fit = cfg["descriptor"], cfg["fitting_net"]
        if not isinstance(desc["sel"], list):
            raise ValueError('model.descriptor.sel is "auto": resolve it from data first '
                             "(deeppot.data.neighbor_stat.resolve_sel) or give integers")
        ntypes = len(cfg["type_map"])
        descriptor = DescrptSeA(
            ntypes, desc["sel"], desc["rcut"], desc["rcut_smth"], desc["neuron"], desc["axis_neuron"],
            desc["activation_function"], desc["resnet_dt"], desc["type_one_side"], desc["exclude_types"],
            desc["env_protection"], desc["set_davg_zero"], precision_dtype(desc["precision"]), desc["seed"])
        fitting = EnergyFitting(ntypes, descriptor.dim_out, fit["neuron"], fit["activation_function"],
                                fit["resnet_dt"], precision_dtype(fit["precision"]), fit["seed"])
        return cls(cfg["type_map"], descriptor, fitting, cfg)

    @property
    def rcut(self) -> float:
        return self.descriptor.rcut

    @property
    def sel(self) -> list[int]:
        return self.descriptor.sel

    def atomic_energy_from_pairs(self, pairs: PairData, rij: Tensor) -> Tensor:
        """Per-atom energies (nf, nloc), float64, from pair vectors rij (nf, nloc, nnei, 3)."""
        desc = self.descriptor(rij, pairs.nlist_loc, pairs.center_type, pairs.neighbor_type, pairs.groups,
                               pairs.layout)
        return self.fitting(desc, pairs.center_type, pairs.groups)

    def forward_lower(self, ext_coord: Tensor, ext_atype: Tensor, nlist: Tensor, mapping: Tensor,
                      do_atomic_virial: bool = False, create_graph: bool = False) -> dict[str, Tensor]:
        """Energy, forces, virial from precomputed neighbour data (the core entry point; no host sync).

        ext_coord (nf, nall, 3), ext_atype (nf, nall), nlist (nf, nloc, nnei), mapping (nf, nall).
        Returns float64 energy (nf,), atom_energy (nf, nloc), force (nf, nloc, 3), virial (nf, 9)
        [, atom_virial (nf, nloc, 9)]. create_graph keeps the force graph for force training.
        """
        pairs = PairData.from_neighbors(ext_coord, ext_atype, nlist, mapping, self.rcut)
        return self.forward_pairs(pairs, do_atomic_virial, create_graph)

    def forward_pairs(self, pairs: PairData, do_atomic_virial: bool = False,
                      create_graph: bool = False) -> dict[str, Tensor]:
        """Energy, forces, virial from per-pair geometry (what training caches for static frames).

        create_graph keeps the outputs differentiable with respect to the parameters (force training).
        """
        if self.analytic_forces and analytic.supports(self):
            with torch.set_grad_enabled(create_graph and torch.is_grad_enabled()):
                atom_energy, g = self.pair_energy_fn(self, pairs.rij, pairs.nlist_loc, pairs.center_type,
                                                     pairs.neighbor_type, pairs.layout, pairs.type_rows)
                out = self.forces_fn(g, pairs.rij, pairs.nlist_loc, do_atomic_virial)
                return {"energy": atom_energy.sum(dim=-1), "atom_energy": atom_energy, **out}
        return self.forward_pairs_autograd(pairs, do_atomic_virial, create_graph)

    def compile_forces(self) -> None:
        """torch.compile the energy-and-derivative function (first order only, so Inductor can fuse its forward
        and backward). Costs compilation time at the first step of each batch shape. The embedding net in use
        is kept: PyTorch's is compiled with the rest; the fused Triton kernels run as they are between two
        compiled graphs (Inductor does not trace them), call `use_fused_kernels` first for that."""
        if self.embed_fn is not analytic.embed_all:
            self.embed_fn = torch.compiler.disable(self.embed_fn)
        self.env_fn, self.pair_grad_fn = analytic.env_rows, analytic.pair_grad  # Inductor fuses them with the rest
        self.descriptor_fn, self.t_bar_fn = analytic.t_and_descriptor, analytic.t_bar_from_desc_grad
        self.forces_fn = forces_and_virial
        self.pair_energy_fn = torch.compile(analytic.energy_and_pair_grad, dynamic=False)

    def use_fused_kernels(self, device: torch.device, tf32: bool = False) -> bool:
        """Swap in the fused Triton embedding kernels if they can run on `device` for this descriptor.

        tf32: the mixed-precision opt-in (TF32 GEMM inputs in the embedding net, float32 accumulation; float32
        models only). Returns whether the swap happened; the weights are untouched either way.
        """
        from deeppot.kernels import embedding, precision

        if not (self.analytic_forces and analytic.supports(self) and embedding.fusable(self.descriptor)
                and embedding.triton_available(device)):
            return False
        # float64 always runs exact float64 GEMMs
        products = "tf32" if tf32 else precision.embedding_products(self.descriptor, device)
        self.embed_fn = functools.partial(embedding.embed_all, precision=products)
        return True

    def use_env_kernel(self, device: torch.device) -> bool:
        """Swap in the fused Triton environment-matrix kernel (`deeppot.kernels.env_mat`) if Triton runs on
        `device`; returns whether it did."""
        from deeppot.kernels import env_mat
        from deeppot.kernels.embedding import triton_available

        if not triton_available(device):
            return False
        self.env_fn = env_mat.env_rows
        return True

    def use_pair_grad_kernel(self, device: torch.device) -> bool:
        """Swap in dE/dr_ij from dE/dT as Triton kernels forward and backward (`deeppot.kernels.pair_grad`) if
        Triton runs on `device` and the descriptor is float32; returns whether it did. In float64 they are no faster
        than the reference's PyTorch kernels (forward and backward of a water batch on an H100: 171 us against 162;
        the step 1.36 ms against 1.30), in float32 twice as fast (64 us against 135); benchmarks/results run 113."""
        from deeppot.kernels import pair_grad
        from deeppot.kernels.embedding import triton_available

        if not triton_available(device) or self.descriptor.dtype != torch.float32:
            return False
        self.pair_grad_fn = pair_grad.pair_grad
        return True

    def use_descriptor_kernel(self, device: torch.device) -> bool:
        """Swap in T = R^T G / N with D = T^T T<, and dE/dT from dE/dD, as one Triton kernel each, with kernels for
        their backward (`deeppot.kernels.descriptor_training`), if Triton runs on `device`; returns whether it did."""
        from deeppot.kernels import descriptor_training
        from deeppot.kernels.embedding import triton_available

        if not triton_available(device):
            return False
        float32 = self.descriptor.dtype == torch.float32  # T with D in one kernel: faster in float32 only
        self.descriptor_fn = (descriptor_training.trainable_t_and_descriptor if float32
                              else descriptor_training.t_then_descriptor)
        self.t_bar_fn = descriptor_training.trainable_t_bar
        return True

    def use_fitting_kernel(self, device: torch.device) -> str | None:
        """Swap in the fitting nets with the hand-written backward (`deeppot.kernels.fitting`) if Triton runs on
        `device` and the nets qualify. Returns None where it did not, else what its forward's products run on:
        "f16x3" (`fitting_gemm.TrainingProducts`: float32 nets within float16's range on a Hopper-class GPU,
        unless TF32 is allowed; the backward's run as tf32x3) or "cuBLAS" (both ways). The range is checked once,
        on the statistics and weights held now (a --restart's weights are loaded after, as for
        `precision.embedding_products`)."""
        from deeppot.kernels import fitting, fitting_gemm, precision
        from deeppot.kernels.embedding import triton_available

        if not (triton_available(device) and fitting.supports(self.fitting.nets)):
            return None
        f16x3 = (self.fitting.dtype == torch.float32 and not torch.backends.cuda.matmul.allow_tf32
                 and precision.float32_products(self, device) == "f16x3")
        products = fitting_gemm.TrainingProducts() if f16x3 else None
        self.fit_fn = functools.partial(fitting.atomic_energy_and_grad, products=products)
        return "f16x3" if f16x3 else "cuBLAS"

    def use_forces_kernel(self, device: torch.device) -> bool:
        """Swap in forces and virial from dE/dr_ij as one Triton kernel each way (`deeppot.kernels.scatter`,
        `TrainingForces`) if Triton runs on `device`; returns whether it did."""
        from deeppot.kernels import scatter
        from deeppot.kernels.embedding import triton_available

        if not triton_available(device):
            return False
        self.forces_fn = scatter.training_forces_and_virial
        return True

    def forward_pairs_autograd(self, pairs: PairData, do_atomic_virial: bool = False,
                               create_graph: bool = False) -> dict[str, Tensor]:
        """The reference: dE/dr_ij by autograd (with create_graph for training: a double backward)."""
        rij = pairs.rij.detach().requires_grad_(True)
        with torch.enable_grad():
            atom_energy = self.atomic_energy_from_pairs(pairs, rij)
            energy = atom_energy.sum(dim=-1)
            (g,) = torch.autograd.grad(energy.sum(), rij, create_graph=create_graph)
        out = forces_and_virial(g, rij, pairs.nlist_loc, do_atomic_virial)
        return {"energy": energy, "atom_energy": atom_energy, **out}

    def forward(self, coord: Tensor, atype: Tensor, box: Tensor | None = None,
                do_atomic_virial: bool = False) -> dict[str, Tensor]:
        """Energy, forces, virial for frames of one system.

        coord (nf, nloc, 3) Å, atype (nf, nloc) or (nloc,) model type indices, box (nf, 3, 3) or (nf, 9)
        row vectors, or None without periodic boundaries.
        """
        return self.forward_pairs(self._pairs(coord, atype, box), do_atomic_virial)

    def descriptor_of(self, coord: Tensor, atype: Tensor, box: Tensor | None = None) -> Tensor:
        """The descriptor (nf, nloc, M1*M2) of each atom in float64, what the fitting net reads (DeePMD-kit's
        `eval_descriptor`, in its layout); inputs as `forward`'s."""
        pairs = self._pairs(coord, atype, box)
        return self.descriptor(pairs.rij, pairs.nlist_loc, pairs.center_type, pairs.neighbor_type, pairs.groups,
                               pairs.layout)

    def _pairs(self, coord: Tensor, atype: Tensor, box: Tensor | None) -> PairData:
        from deeppot.nlist import build_neighbor_data

        coord, atype, box = _as_batch(coord, atype, box)
        nd = build_neighbor_data(coord, atype, box, self.rcut, self.sel)
        pairs = PairData.from_neighbors(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping, self.rcut)
        if bool((atype == atype[:1]).all()):  # one system: let each net run on its own atoms
            pairs.groups = type_groups(atype[0], len(self.type_map))
        return pairs


class PairData:
    """Per-pair geometry of a batch: everything the model needs from the neighbour list.

    rij (nf, nloc, nnei, 3) pair vectors; nlist_loc (nf, nloc, nnei) the local owner of each neighbour in the
    DeePMD slot layout (-1 = padding); center_type (nf, nloc); neighbor_type (nf, nloc, nnei), -1 for padding.
    groups (optional): per type, the indices of its atoms, when every frame has the same types (one system);
    the nets then run on their own atoms only; type_rows (optional): the same as the rows of the analytic path's
    fitting nets (`deeppot.model.fitting.TypeRows`). layout (optional): where the slots of a list trimmed to fewer
    than sel sit (`deeppot.model.slots`); None: sel.
    Training frames never move, so this is computed once per frame and reused at every step.
    """

    def __init__(self, rij: Tensor, nlist_loc: Tensor, center_type: Tensor, neighbor_type: Tensor,
                 groups: list[Tensor] | None = None, layout: SlotLayout | None = None,
                 type_rows: TypeRows | None = None) -> None:
        self.rij, self.nlist_loc = rij, nlist_loc
        self.center_type, self.neighbor_type = center_type, neighbor_type
        self.groups, self.layout, self.type_rows = groups, layout, type_rows

    @classmethod
    def from_neighbors(cls, ext_coord: Tensor, ext_atype: Tensor, nlist: Tensor, mapping: Tensor,
                       rcut: float) -> PairData:
        """Gather pair vectors and the owners/types of neighbours from extended-atom neighbour data."""
        rij, _ = neighbor_vectors(ext_coord, nlist, rcut)
        nf, nloc, nnei = nlist.shape
        flat = nlist.clamp(min=0).reshape(nf, -1)
        nlist_loc = torch.where(nlist >= 0, torch.gather(mapping, 1, flat).reshape(nf, nloc, nnei), -1)
        neighbor_type = torch.where(nlist >= 0, torch.gather(ext_atype, 1, flat).reshape(nf, nloc, nnei), -1)
        return cls(rij, nlist_loc, ext_atype[:, :nloc].clamp(min=0), neighbor_type)

    def tensors(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        return self.rij, self.nlist_loc, self.center_type, self.neighbor_type

    def to(self, device: torch.device | str) -> PairData:
        groups = None if self.groups is None else [g.to(device) for g in self.groups]
        return PairData(*(t.to(device) for t in self.tensors()), groups=groups,
                        layout=None if self.layout is None else self.layout.to(device),
                        type_rows=None if self.type_rows is None else self.type_rows.to(device))


def type_groups(atype: Tensor, ntypes: int, counts: list[int] | None = None) -> list[Tensor]:
    """Per type 0..ntypes-1, the indices of its atoms in atype (n,), ascending (negative types in none). One host
    sync to size the lists, whatever ntypes (one stable sort and one count, not a `nonzero` per type): call where
    that is cheap, or keep the lists (the inference kernels' `FlatNeighbors.rows_by_type`). counts: the atoms of
    each type -1 (every negative type), 0, ..., ntypes - 1, when the caller knows them: then no sync."""
    if counts is None:
        counts = torch.bincount(atype.clamp(min=-1) + 1, minlength=ntypes + 1)[:ntypes + 1].tolist()
    order = torch.argsort(atype, stable=True)
    return list(torch.split(order[counts[0]:counts[0] + sum(counts[1:])], counts[1:]))


def _as_batch(coord: Tensor, atype: Tensor, box: Tensor | None) -> tuple[Tensor, Tensor, Tensor | None]:
    coord = torch.as_tensor(coord, dtype=torch.float64)
    if coord.dim() == 2:
        coord = coord[None]
    nf = coord.shape[0]
    coord = coord.reshape(nf, -1, 3)
    atype = torch.as_tensor(atype, dtype=torch.long, device=coord.device)
    if atype.dim() == 1:
        atype = atype[None].expand(nf, -1)
    if box is not None:
        box = torch.as_tensor(box, dtype=torch.float64, device=coord.device).reshape(nf, 3, 3)
    return coord, atype, box


__all__ = ["EnergyModel", "PairData", "forces_and_virial", "scatter_pairs", "type_groups"]
