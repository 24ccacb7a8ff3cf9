"""Memory techniques for training on large frames (issue 13): each a `training` key, off by default.

- `activation_checkpointing`: the embedding net's intermediates are not kept for the backward pass but recomputed
  there (torch.utils.checkpoint, non-reentrant); with `atom_chunk`, each chunk's whole energy-and-derivative pass.
- `atom_chunk`: a frame's centre atoms go through the model in slices of at most that many. Every atom's energy
  and dE/dr_ij depend on its own neighbour rows only, so the slices are independent and the result is the same.
- `mixed_precision` {"output_prec": "float32", "compute_prec": "bfloat16"} (DeePMD-kit TF's key): the GEMMs of
  the embedding and fitting nets run in bfloat16 under torch.autocast (float32 accumulation); the environment
  matrix, the descriptor contraction, the derivative and every output stay float32 (float32 models only).
- `zero_stage: 1` (DeePMD-kit PT's key): under torchrun the optimizer states are sharded over the ranks
  (torch.distributed.optim.ZeroRedundancyOptimizer): each rank updates its share of the parameters and broadcasts
  them. A no-op in one process.

The first three are swaps of the model's functions (`EnergyModel.pair_energy_fn`, `embed_fn`, `fit_fn`), as
`compile_forces` and `use_fused_kernels` are: the weights and the reference path are untouched. The fourth wraps
the optimizer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.checkpoint import checkpoint

from deeppot.model import analytic

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MemoryOptions:
    """The memory keys of the `training` section, resolved (defaults: everything off)."""

    checkpointing: bool = False
    atom_chunk: int | None = None
    bf16: bool = False
    zero_stage: int = 0

    @classmethod
    def from_training(cls, training: dict[str, Any]) -> MemoryOptions:
        return cls(checkpointing=training.get("activation_checkpointing", False),
                   atom_chunk=training.get("atom_chunk"), bf16="mixed_precision" in training,
                   zero_stage=training.get("zero_stage", 0))

    @property
    def swaps_model(self) -> bool:
        return self.checkpointing or self.atom_chunk is not None or self.bf16

    def names(self) -> list[str]:
        """The keys switched on, as `training.<key>` (for log lines and error messages)."""
        on = {"activation_checkpointing": self.checkpointing, "atom_chunk": self.atom_chunk is not None,
              "mixed_precision": self.bf16, "zero_stage": self.zero_stage > 0}
        return [f"training.{key}" for key, value in on.items() if value]


def recomputed(fn: Callable) -> Callable:
    """fn, its intermediates recomputed in the backward instead of kept (only where a graph is being built).

    preserve_rng_state=False: the model draws no random numbers, and saving the RNG state would cost a copy.
    """

    def run(*args):
        if not torch.is_grad_enabled():
            return fn(*args)
        return checkpoint(fn, *args, use_reentrant=False, preserve_rng_state=False)

    return run


def autocast_bf16(fn: Callable) -> Callable:
    """fn(module, x, ...) with its GEMMs in bfloat16 (torch.autocast); outputs other than float64 are cast back to
    module.dtype (float32), so what follows the nets runs as without autocast."""

    def run(module, x, *rest):
        with torch.autocast(x.device.type, dtype=torch.bfloat16):
            outputs = fn(module, x, *rest)
        return tuple(o if o.dtype == torch.float64 else o.to(module.dtype) for o in outputs)

    return run


def use_bf16(model) -> None:
    """The embedding and fitting nets under bfloat16 autocast (the PyTorch embedding: the fused kernels do not
    autocast)."""
    # input.json was checked, but a fine-tuning run may take its model section from the pretrained model
    if model.descriptor.dtype != torch.float32 or model.fitting.dtype != torch.float32:
        raise ValueError("training.mixed_precision needs a float32 model: set model.descriptor.precision and "
                         'model.fitting_net.precision to "float32"')
    if model.embed_fn is not analytic.embed_all:
        log.info("training.mixed_precision: the PyTorch embedding net runs (the fused kernels do not autocast)")
    model.embed_fn = autocast_bf16(analytic.embed_all)
    model.fit_fn = autocast_bf16(model.fit_fn)
    log.info("training.mixed_precision: embedding and fitting GEMMs in bfloat16 (torch.autocast), the rest float32")


def chunked(fn: Callable, atom_chunk: int) -> Callable:
    """`analytic.energy_and_pair_grad`-like fn over slices of at most atom_chunk centre atoms, concatenated.

    Returns (atomic energies (nf, nloc), dE/dr_ij (nf, nloc, nnei, 3)) as fn does on the whole frame.
    """

    def run(model, rij, nlist, center_type, neighbor_type, layout=None, type_rows=None):  # the whole frames' rows
        parts = [fn(model, rij[:, s:s + atom_chunk], nlist[:, s:s + atom_chunk], center_type[:, s:s + atom_chunk],
                    neighbor_type[:, s:s + atom_chunk], layout) for s in range(0, rij.shape[1], atom_chunk)]
        if len(parts) == 1:
            return parts[0]
        energies, grads = zip(*parts, strict=True)
        return torch.cat(energies, dim=1), torch.cat(grads, dim=1)

    return run


def apply_memory_options(model, options: MemoryOptions, tf32: bool = False) -> None:
    """Swap the model's energy function for the checkpointed, chunked and/or bf16 one; log what runs."""
    if not options.swaps_model:
        return
    if options.bf16 and tf32:
        raise ValueError("training.mixed_precision (bfloat16) and --tf32 exclude each other: choose one")
    if not (model.analytic_forces and analytic.supports(model)):
        raise ValueError(f"{', '.join(options.names())} need the analytic force path (every activation function "
                         f"of the model has a written-out derivative)")
    if options.bf16:  # first: the checkpoint below then recomputes the autocast nets
        use_bf16(model)
    if options.atom_chunk is None and options.checkpointing:  # the embedding net holds most activations
        model.embed_fn = recomputed(model.embed_fn)
        log.info("training.activation_checkpointing: the embedding net is recomputed in the backward pass")
    if options.atom_chunk is None:
        return
    per_chunk = recomputed(model.pair_energy_fn) if options.checkpointing else model.pair_energy_fn
    model.pair_energy_fn = chunked(per_chunk, options.atom_chunk)
    log.info("training.atom_chunk: at most %d centre atoms per pass%s", options.atom_chunk,
             ", each chunk recomputed in the backward pass" if options.checkpointing else
             " (without activation_checkpointing every chunk's activations are still kept)")


def use_cuda_graph(requested: bool | None, device: torch.device, options: MemoryOptions, world_size: int = 1) -> bool:
    """Whether the training step is captured in CUDA graphs (requested None: on CUDA devices).

    The memory options run on the eager step: checkpointing's recomputation and the chunked passes were never
    captured and checked, so with them on the eager step is chosen (and logged), and an explicit request refused.
    """
    use = device.type == "cuda" if requested is None else requested
    names = [n for n in options.names() if n != "training.zero_stage" or world_size > 1]  # one process: no-op
    if not (use and names):
        return use
    keys = ", ".join(names)
    if requested:
        raise ValueError(f"{keys} run on the eager training step only: leave CUDA graphs off (--no-cuda-graph)")
    log.info("%s: the eager training step runs (not the CUDA-graph one)", keys)
    return False


def make_optimizer(cls: type[torch.optim.Optimizer], params, zero_stage: int, world_size: int,
                   **kwargs) -> torch.optim.Optimizer:
    """cls(params, **kwargs), or with zero_stage 1 on several ranks its ZeRO-1 wrapper (optimizer states sharded).

    The wrapper applies the same update as cls on every rank (the gradients are already averaged), so the weights
    equal those of the unsharded run.
    """
    if zero_stage == 0:
        return cls(params, **kwargs)
    if world_size == 1:
        log.info("training.zero_stage 1: one process, nothing to shard (the plain optimizer runs)")
        return cls(params, **kwargs)
    # imported here: torch.distributed.optim scripts its functional optimizers with torch.jit on import
    from torch.distributed.optim import ZeroRedundancyOptimizer

    log.info("training.zero_stage 1: %s states sharded over %d ranks (ZeroRedundancyOptimizer)", cls.__name__,
             world_size)
    return ZeroRedundancyOptimizer(params, optimizer_class=cls, **kwargs)


def gather_optimizer_state(optimizer: torch.optim.Optimizer) -> None:
    """Before rank 0 saves a checkpoint: every rank sends its shard of the optimizer state to rank 0 (a
    collective, so every rank calls it); nothing for an unsharded optimizer. The checkpoint then holds the whole
    state in the ordinary layout, so it restarts sharded or not, on any number of ranks."""
    if hasattr(optimizer, "consolidate_state_dict"):  # a ZeroRedundancyOptimizer
        optimizer.consolidate_state_dict(to=0)
