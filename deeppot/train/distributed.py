"""Data-parallel training over torch.distributed ranks (spec §16): process group, gradient averaging, seeds.

Every rank holds the whole model and draws its own batches; after the backward pass the gradients are averaged
over the ranks (one all-reduce per dtype), so every rank applies the same update and the weights stay equal.
A single process (no torchrun, or WORLD_SIZE=1) never comes here beyond `from_env`, which then returns the
one-process `DistInfo` without touching torch.distributed.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

log = logging.getLogger(__name__)

SCALE_BY_WORKER = ("linear", "sqrt", "none")


@dataclass(frozen=True)
class DistInfo:
    """This process's place among the training ranks (the defaults: a single process)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """Rank 0 writes lcurve.out, checkpoints, out.json and the log."""
        return self.rank == 0


def from_env(device_name: str | None) -> tuple[DistInfo, torch.device | None]:
    """Join the process group that torchrun describes in the environment (WORLD_SIZE > 1).

    Returns the ranks and the device this rank trains on (cuda:LOCAL_RANK on GPUs; None: pick as usual).
    NCCL for CUDA tensors, gloo for CPU ones (the same backend string as DeePMD-kit).
    """
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return DistInfo(), None
    info = DistInfo(int(os.environ["RANK"]), world_size, int(os.environ.get("LOCAL_RANK", "0")))
    wants_cuda = torch.cuda.is_available() if device_name is None else device_name.startswith("cuda")
    device = torch.device("cuda", info.local_rank) if wants_cuda else torch.device("cpu")
    if wants_cuda:
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group(backend="cuda:nccl,cpu:gloo" if wants_cuda else "gloo")
    return info, device


def quiet_other_ranks(info: DistInfo) -> None:
    """Only rank 0 logs progress: the others keep warnings and errors (rank-tagged by the launcher)."""
    if not info.is_main:
        logging.getLogger("deeppot").setLevel(logging.WARNING)


def lr_scale(mode: str, world_size: int) -> float:
    """learning_rate.scale_by_worker as DeePMD-kit's TensorFlow trainer applies it to the optimizer's rate.

    linear: × world_size, sqrt: × sqrt(world_size), none: × 1 (deepmd/tf/train/trainer.py, get_lr_and_coef).
    """
    if mode == "linear":
        return float(world_size)
    if mode == "sqrt":
        return math.sqrt(world_size)
    if mode == "none":
        return 1.0
    raise ValueError(f"learning_rate.scale_by_worker: {mode!r} is not one of {SCALE_BY_WORKER}")


def rank_seed(seed: int | None, info: DistInfo, start_step: int = 0) -> int | list[int] | None:
    """The data-sampling seed of a rank: the training seed itself on rank 0 (so one process is unchanged),
    [seed, rank] on the others, and [seed, rank, start_step] for ranks that re-derive their stream on restart."""
    if seed is None or (info.rank == 0 and start_step == 0):
        return seed
    return [seed, info.rank, start_step] if start_step else [seed, info.rank]


def broadcast_state(module: torch.nn.Module) -> None:
    """Rank 0's parameters and buffers (statistics included) to every rank, as DDP does at construction."""
    with torch.no_grad():
        for tensor in module.state_dict().values():
            dist.broadcast(tensor, src=0)


def average_gradients(params: list[torch.nn.Parameter], world_size: int) -> None:
    """Replace each gradient by its mean over the ranks: one all-reduce per dtype of a flat buffer.

    A parameter without a gradient on this rank (an atom type absent from its batch) takes part with zeros, so
    every rank reduces buffers of the same layout and ends with the same gradient. No host sync: this runs
    inside the captured CUDA graph of the training step as well.
    """
    by_dtype: dict[torch.dtype, list[torch.nn.Parameter]] = {}
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        by_dtype.setdefault(p.dtype, []).append(p)
    for group in by_dtype.values():
        grads = [p.grad for p in group]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat)
        flat.div_(world_size)
        # one multi-tensor copy back instead of a copy kernel per parameter (tens of launches in a 2 ms step)
        torch._foreach_copy_(grads, [part.view_as(g) for g, part in zip(grads, flat.split([g.numel() for g in grads]),
                                                                        strict=True)])


def sum_over_ranks(values: torch.Tensor) -> torch.Tensor:
    """values summed over the ranks (in place), or as they are in one process."""
    if dist.is_available() and dist.is_initialized():
        dist.all_reduce(values)
    return values


def barrier(info: DistInfo) -> None:
    if info.enabled:
        dist.barrier()


def shutdown(info: DistInfo) -> None:
    if info.enabled and dist.is_initialized():
        dist.destroy_process_group()
