"""Memory techniques for training on large frames (issue 13): each a `training` key, off by default.

- `activation_checkpointing`: the embedding net's intermediates are not kept for the backward pass but recomputed
  there (torch.utils.checkpoint, non-reentrant).

They are swaps of the model's energy function (`EnergyModel.pair_energy_fn`, `embed_fn`), as `compile_forces` and
`use_fused_kernels` are: the weights and the reference path are untouched.
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

    @classmethod
    def from_training(cls, training: dict[str, Any]) -> MemoryOptions:
        return cls(checkpointing=training.get("activation_checkpointing", False))

    @property
    def swaps_model(self) -> bool:
        return self.checkpointing

    def names(self) -> list[str]:
        """The keys switched on, as `training.<key>` (for log lines and error messages)."""
        on = {"activation_checkpointing": self.checkpointing}
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


def apply_memory_options(model, options: MemoryOptions) -> None:
    """Swap the model's embedding function for the checkpointed one; log what runs."""
    if not options.swaps_model:
        return
    if not (model.analytic_forces and analytic.supports(model)):
        raise ValueError(f"{', '.join(options.names())} need the analytic force path (every activation function "
                         f"of the model has a written-out derivative)")
    # the embedding net holds most of the activations: recompute it alone
    model.embed_fn = recomputed(model.embed_fn)
    log.info("training.activation_checkpointing: the embedding net is recomputed in the backward pass")


def use_cuda_graph(requested: bool | None, device: torch.device, options: MemoryOptions) -> bool:
    """Whether the training step is captured in CUDA graphs (requested None: on CUDA devices).

    The memory options run on the eager step: checkpointing's recomputation and the chunked passes were never
    captured and checked, so with them on the eager step is chosen (and logged), and an explicit request refused.
    """
    use = device.type == "cuda" if requested is None else requested
    if not (use and options.names()):
        return use
    keys = ", ".join(options.names())
    if requested:
        raise ValueError(f"{keys} run on the eager training step only: leave CUDA graphs off (--no-cuda-graph)")
    log.info("%s: the eager training step runs (not the CUDA-graph one)", keys)
    return False
