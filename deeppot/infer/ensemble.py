"""An ensemble of models evaluated in one call on shared neighbour data: model deviation (DP-GEN, spec §13).

Model deviation evaluates nm models of one architecture on the same frames. Model after model, every model pays
the full launch and memory-traffic cost of the pair stage; here their weights are stacked (`torch.func.
stack_module_state`) and the hand-written first-derivative path (`deeppot.model.analytic.energy_and_pair_grad`, no
autograd) is mapped over the model axis with `torch.func.vmap`: each tensor operation of the pair stage runs once
for all models, with a leading model axis. Forces and virials come from g = dE/dr_ij through the same
`add_forces_and_virial` as a single model's, applied to all models at once.

Models that cannot be stacked (`unbatchable_reason`: different architecture, compressed tables, no hand-written
derivative, different devices) are evaluated one after another by their own `Evaluator`s (`sequential_reason`);
`EnsembleEvaluator` logs once which path runs and why. The weights are copied into the stack when it is built: a
model changed afterwards needs a new `EnsembleEvaluator`.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch.func import functional_call, stack_module_state, vmap

from deeppot.infer.deep_pot import Evaluator, bytes_per_centre, memory_budget
from deeppot.infer.evaluate import FlatNeighbors, add_forces_and_virial, chunks, frame_outputs, reference_pair_data
from deeppot.model import EnergyModel, analytic

__all__ = ["EnsembleEvaluator", "StackedModels", "architecture", "evaluate_stacked", "sequential_reason",
           "unbatchable_reason"]

log = logging.getLogger(__name__)

FUSED_CROSSOVER_ATOMS = 2048  # centres per call up to which the stack is used beside fused evaluators


def architecture(model: EnergyModel) -> dict[str, object]:
    """What the stacked evaluation takes from the first model only: every hyper-parameter that steers the code
    path (the stack replaces tensors, not Python attributes), and the name, shape and dtype of every tensor."""
    d, fit = model.descriptor, model.fitting
    tensors = {name: (tuple(t.shape), t.dtype, str(t.device))
               for name, t in [*model.named_parameters(), *model.named_buffers()]}
    return {
        "type_map": list(model.type_map), "descriptor.sel": list(d.sel), "descriptor.rcut": d.rcut,
        "descriptor.rcut_smth": d.rcut_smth, "descriptor.neuron": list(d.neuron),
        "descriptor.axis_neuron": d.axis_neuron, "descriptor.activation_function": d.activation_function,
        "descriptor.resnet_dt": d.resnet_dt, "descriptor.type_one_side": d.type_one_side,
        "descriptor.exclude_types": sorted(tuple(sorted(p)) for p in d.exclude_types),
        "descriptor.env_protection": d.env_protection, "descriptor.precision": d.dtype,
        "fitting_net.neuron": list(fit.neuron), "fitting_net.activation_function": fit.activation_function,
        "fitting_net.resnet_dt": fit.resnet_dt, "fitting_net.precision": fit.dtype,
        "layers": [(layer.activation_function, layer.resnet) for nets in (d.nets, fit.nets) for layer in nets.layers],
        "tensors": tensors,
    }


def unbatchable_reason(models: Sequence[EnergyModel]) -> str | None:
    """Why these models cannot be evaluated as one stack (None: they can)."""
    if len(models) < 2:
        return "a single model"
    for i, model in enumerate(models):
        if model.descriptor.compressed:
            return f"model {i} is compressed (its tabulated embedding is evaluated per model)"
        if not (model.analytic_forces and analytic.supports(model)):
            return f"model {i} has no hand-written derivative (analytic_forces off or an unsupported activation)"
    first = architecture(models[0])
    for i, model in enumerate(models[1:], 1):
        for key, value in architecture(model).items():
            if value != first[key]:
                return f"model {i} differs from model 0 in {_difference(key, value, first[key])}"
    return None


def _difference(key: str, value: object, first: object) -> str:
    if key != "tensors":
        return f"{key} ({value} against {first})"
    name = next(n for n in sorted({*value, *first}) if value.get(n) != first.get(n))
    return f"tensor {name} (shape, dtype, device {value.get(name)} against {first.get(name)})"


def sequential_reason(models: Sequence[EnergyModel], batched: bool | None) -> str | None:
    """Why the models go one after another (None: in one batched call)."""
    return "batching switched off" if batched is False else unbatchable_reason(models)


class _PairEnergy(nn.Module):
    """A model's pair stage as a module's forward, so that `functional_call` can run it on other weights. Always
    the PyTorch embedding: the fused Triton twin of a single model does not take a model axis."""

    def __init__(self, model: EnergyModel) -> None:
        super().__init__()
        self.model = model

    def forward(self, rij: Tensor, nlist: Tensor, center_type: Tensor, neighbor_type: Tensor) -> tuple[Tensor, Tensor]:
        return analytic.energy_and_pair_grad(self.model, rij, nlist, center_type, neighbor_type)


class StackedModels:
    """The parameters and buffers of nm models of one architecture, stacked along a new leading model axis."""

    def __init__(self, models: Sequence[EnergyModel]) -> None:
        reason = unbatchable_reason(models)
        if reason is not None:
            raise ValueError(f"these models cannot be stacked: {reason}")
        modules = [_PairEnergy(m) for m in models]
        params, buffers = stack_module_state(modules)
        self.params = {k: v.detach() for k, v in params.items()}
        self.buffers = {k: v.detach() for k, v in buffers.items()}
        # the skeleton runs only on the stacked tensors: on the meta device, a tensor it failed to replace would
        # raise instead of silently lending model 0's values to every model
        self.template = copy.deepcopy(modules[0]).to("meta")
        self.template.model.embed_fn = analytic.embed_all
        self.nmodels, self.rcut, self.dtype = len(models), models[0].rcut, models[0].descriptor.dtype
        self._mapped = vmap(self._one, in_dims=(0, 0, None, None, None, None))

    def _one(self, params: dict, buffers: dict, *args: Tensor) -> tuple[Tensor, Tensor]:
        return functional_call(self.template, (params, buffers), args)

    def pair_stage(self, rij: Tensor, nlist_loc: Tensor, center_type: Tensor,
                   neighbor_type: Tensor) -> tuple[Tensor, Tensor]:
        """Atomic energies (nm, n) float64 and g = dE/dr_ij (nm, n, nnei, 3) of one chunk of n centres, every
        model at once (the arguments as `deeppot.infer.evaluate.reference_pair_stage`'s)."""
        with torch.no_grad():
            energy, g = self._mapped(self.params, self.buffers, rij[None], nlist_loc[None], center_type[None],
                                     neighbor_type[None])
        return energy[:, 0], g[:, 0]


def evaluate_stacked(stack: StackedModels, flat: FlatNeighbors, chunk_atoms: int) -> dict[str, Tensor]:
    """`deeppot.infer.evaluate.evaluate_flat` for every model of the stack at once: float64 energy (nm, nf),
    atom_energy (nm, nf, nloc), force (nm, nf, nloc, 3), virial (nm, nf, 9), `chunk_atoms` centres at a time."""
    nm, n, device = stack.nmodels, flat.ncentre, flat.nlist.device
    atom_energy = torch.empty(nm, n, dtype=torch.float64, device=device)
    force = torch.zeros(nm, n, 3, dtype=torch.float64, device=device)
    virial = torch.zeros(nm, n, 9, dtype=torch.float64, device=device)
    for start, stop in chunks(n, chunk_atoms):
        rij, nlist_loc, neighbor_type = reference_pair_data(flat, start, stop, stack.rcut, stack.dtype)
        energy, g = stack.pair_stage(rij.to(stack.dtype), nlist_loc, flat.center_type[start:stop], neighbor_type)
        atom_energy[:, start:stop] = energy
        add_forces_and_virial(force, virial, g, rij, nlist_loc, start, atomic=False)
    return frame_outputs(atom_energy, force, virial, flat.nf, flat.nloc)


class EnsembleEvaluator:
    """Energy, forces and virials of several models on the same neighbour data.

    evaluators: one `Evaluator` per model, on one device. batched: None stacks the models where
    `unbatchable_reason` allows, and else evaluates them one after another (each through its own evaluator, fused
    kernels included); True insists on the stack (ValueError where it cannot run; a lone model is simply
    evaluated); False never stacks.
    """

    def __init__(self, evaluators: Sequence[Evaluator], batched: bool | None = None) -> None:
        self.evaluators, self.insist = list(evaluators), bool(batched)
        models, device = [ev.model for ev in self.evaluators], self.evaluators[0].device
        reason = sequential_reason(models, batched)
        if reason is not None and batched and len(models) > 1:
            raise ValueError(f"the models cannot be evaluated in one batched call: {reason}")
        self.stack = StackedModels(models) if reason is None else None
        # vmap keeps every intermediate of every model at once: nm times one model's chunk memory; on a CPU
        # small chunks stay in cache (192-atom water, 4 models, one thread, 12-96 centres a chunk against 254:
        # 1.35-1.5x faster in float64, 1.1-1.4x in float32; with 254 the stack was 1.4-1.6x slower than model
        # by model, with 32 about as fast)
        self.chunk_atoms = max(1, memory_budget(device) // (len(models) * bytes_per_centre(models[0], False)))
        if device.type == "cpu":
            self.chunk_atoms = min(self.chunk_atoms, 32)
        if reason is None:
            log.info("model deviation: %d models evaluated in one batched call (stacked weights), %d centres a "
                     "chunk", len(models), self.chunk_atoms)
        elif len(models) > 1:  # a lone model (a group of its own in `deeppot model-devi`) has nothing to batch
            log.info("model deviation: %d models evaluated one after another: %s", len(models), reason)

    def stack_is_quicker(self, ncentre: int) -> bool:
        """The automatic choice per call. The stack runs the PyTorch pair stage; where the models' own evaluators
        run the fused kernels, those win once the launches no longer dominate, so the stack is kept for calls of
        launch-bound size. Measured (one H100, run 27, 4 float32 water models, ms a deviation, stacked / model by
        model): 192 atoms 10.2 / 18.5, 1,536 atoms 13.9 / 19.7, 12,288 atoms 84 / 39, 98,304 atoms 654 / 227."""
        return not self.evaluators[0].fused or ncentre <= FUSED_CROSSOVER_ATOMS

    @property
    def batched(self) -> bool:
        return self.stack is not None

    def evaluate_neighbors(self, flat: FlatNeighbors) -> dict[str, Tensor]:
        """float64 energy (nm, nf), atom_energy (nm, nf, nloc), force (nm, nf, nloc, 3), virial (nm, nf, 9)."""
        if self.stack is not None and (self.insist or self.stack_is_quicker(flat.ncentre)):
            return evaluate_stacked(self.stack, flat, self.chunk_atoms)
        outs = [ev.evaluate_neighbors(flat) for ev in self.evaluators]
        return {key: torch.stack([out[key] for out in outs]) for key in ("energy", "atom_energy", "force", "virial")}
