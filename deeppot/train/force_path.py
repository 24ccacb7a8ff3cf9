"""How this run's training step computes energies, forces and the loss: which embedding net (the fused Triton
kernels or PyTorch's), and whether torch.compile fuses the rest (`batch_loss`: forces, virial and loss of a batch).

Measured on one H100 (benchmarks/results, run 255, ms a step, default against compiled, one process each): water
float32 0.696 against 0.845, copper 0.461 against 0.485, the alloy 0.619 against 0.749, water float64 1.177
against 0.991. The default float32 step (the fused kernels on f16x3 products) is the faster one, so only float64
models compile by themselves. Compiling costs start-up time (12-14 s with a warm Inductor cache, 26-45 s cold),
and each batch shape compiles its own graphs, so it is done where it pays: a float64 GPU run of at least
`COMPILE_MIN_STEPS` steps and at most `COMPILE_MAX_SHAPES` batch shapes, in one process, without the memory
options; `training.enable_compile` or `--compile` decide otherwise. Under compile the embedding follows a rule:
PyTorch's (compiled with the rest) where each slot goes through one net, the fused kernels for two-sided
descriptors of several types, whose PyTorch form runs every net on every slot (alloy: 2.46 ms against 1.31, run
36). The rule held with the f16x3 kernels too (run 244, H200, compiled steps with PyTorch's embedding against the
kernels: water float32 0.812 against 0.826 ms, copper 0.473 against 0.483, water float64 0.910 against 1.125).
Without compile the faster of the two is timed (deeppot.train.kernel_choice).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from deeppot.model import analytic
from deeppot.train.distributed import sum_over_ranks
from deeppot.train.graph_step import batch_shapes
from deeppot.train.kernel_choice import cache_file, choose_for_sampler, largest_batch
from deeppot.train.memory import MemoryOptions

log = logging.getLogger("deeppot")

COMPILE_MIN_STEPS = 200_000  # float64 saves ~0.19 ms a step: a cold compile (~26-45 s) pays back within this many
COMPILE_MAX_SHAPES = 2  # each batch shape compiles anew (10-15 s): automatic only for this few


class TrainingError(RuntimeError):
    """Training cannot go on (NaN loss, mismatched checkpoint); the message says what to do."""


@dataclass(frozen=True)
class PathOptions:
    """The run's requests: None leaves the choice to the rules above."""

    fused_kernels: bool | None
    compile: bool | None
    tf32: bool
    graphed: bool
    distributed: bool


def wants_compile(request: PathOptions, training: dict, steps: int, device: torch.device,
                  memory: MemoryOptions, dtype: torch.dtype, shapes: int = 1) -> bool:
    """dtype: the model's precision (float32 steps run faster uncompiled); shapes: the distinct batch shapes of
    training and validation (each compiles its own graphs)."""
    explicit = request.compile if request.compile is not None else training.get("enable_compile") or None
    if explicit and memory.swaps_model:
        raise TrainingError(f"torch.compile does not combine with {', '.join(memory.names())}: turn one off")
    if explicit is not None:
        return explicit
    return (device.type == "cuda" and dtype == torch.float64 and steps >= COMPILE_MIN_STEPS
            and shapes <= COMPILE_MAX_SHAPES and not request.distributed and not memory.swaps_model)


def distinct_shapes(*samplers) -> int:
    """How many (atoms, frames) batch shapes the samplers can draw together (None: no sampler)."""
    return len({(s.stores[store_id].natoms, len(frames)) for s in samplers if s is not None
                for store_id, frames in batch_shapes(s)})


def one_net_per_slot(descriptor) -> bool:
    return descriptor.type_one_side or descriptor.ntypes == 1


def choose_force_path(model, sampler, loss, request: PathOptions, compiled: bool,
                      memory: MemoryOptions) -> Callable:
    """Set the model's embedding function; return the batch-loss function to train with: `batch_loss`, or when
    `compiled` its compiled twin (the plain one, with a warning, if compilation fails)."""
    check_tf32(model, request, sampler.stores[0].device)
    if request.tf32:  # before the embedding timing and the compile: both see the GEMMs the steps will run
        use_tf32_gemms()
    device = sampler.stores[0].device
    if device.type == "cuda" and not compiled and request.fused_kernels is not False and loss.use_kernel(device):
        log.info("loss: fused Triton kernels (graphed steps)")  # compiled, Inductor fuses the reference
    pick_embedding(model, sampler, request, compiled, memory)
    return compile_or_fall_back(model, sampler, loss) if compiled else batch_loss


def pick_embedding(model, sampler, request: PathOptions, compiled: bool, memory: MemoryOptions) -> None:
    """The fused kernels where forced (or by --tf32 uncompiled) or where the rule under compile wants them, PyTorch's
    where forced or where the rule wants it, otherwise the faster of the two by timing. Uncompiled GPU steps take
    the environment-matrix, pair-gradient, force and fitting kernels unless the kernels are turned off."""
    device = sampler.stores[0].device
    if device.type != "cuda" or request.fused_kernels is False:
        return
    if not compiled and model.use_env_kernel(device):  # compiled, Inductor fuses the reference's kernels itself
        log.info("environment matrix: fused Triton kernel")
    if not compiled and model.use_pair_grad_kernel(device):
        log.info("dE/dr_ij from dE/dT: fused Triton kernels")
    if not compiled and model.use_descriptor_kernel(device):
        log.info("D from T and dE/dT from dE/dD: Triton kernels")
    if not compiled and model.use_forces_kernel(device):
        log.info("forces and virial from dE/dr_ij: fused Triton kernels")
    products = None if compiled or memory.bf16 else model.use_fitting_kernel(device)  # bf16 autocasts the reference
    if products:
        log.info("fitting nets: hand-written backward (Triton kernels; products: %s forward, %s backward)",
                 products, "tf32x3" if products == "f16x3" else products)
    if request.fused_kernels or memory.bf16 or (not compiled and request.tf32) or \
            (compiled and not one_net_per_slot(model.descriptor)):
        use_fused(model, device, request.tf32)
    elif compiled:
        log.info("embedding net: PyTorch, compiled with the rest (one net a slot: measured faster than the fused "
                 "kernels under torch.compile)")
    else:  # data-parallel ranks time it together: a file some ranks read and others not would split them
        choose_for_sampler(model, sampler, graphed=request.graphed, agree=sum_over_ranks,
                           cache=None if request.distributed else cache_file())


def check_tf32(model, request: PathOptions, device: torch.device) -> None:
    if not request.tf32:
        return
    if model.descriptor.dtype != torch.float32:
        raise TrainingError("--tf32 needs a float32 descriptor (model.descriptor.precision)")
    if device.type != "cuda":
        raise TrainingError("--tf32 applies to GPU tensor cores: train on a GPU")


def use_tf32_gemms() -> None:
    """--tf32: float32 GEMMs on TF32 tensor cores for this process (cuBLAS's, and Inductor's choices under
    torch.compile; the fused kernels take it as their precision). Off by default, as in PyTorch and DeePMD-kit:
    TF32 rounds GEMM inputs to 10 mantissa bits."""
    torch.backends.cuda.matmul.allow_tf32 = True
    log.info("--tf32: float32 GEMMs use TF32 tensor cores (inputs rounded to 10 mantissa bits)")


def use_fused(model, device: torch.device, tf32: bool) -> None:
    fused = model.use_fused_kernels(device, tf32=tf32)
    log.info("embedding net: %s", "fused Triton kernels" + (" (TF32 GEMMs)" if tf32 else "")
             if fused else "PyTorch (the fused kernels need 3 tanh layers, resnet_dt false and Triton)")


def batch_loss(model, loss, batch, lr, create_graph: bool) -> tuple[Tensor, dict[str, Tensor]]:
    """Loss and metrics of one batch, as the training step (create_graph) and validation compute them."""
    pred = model.forward_pairs(batch.pairs, create_graph=create_graph)
    return loss(pred, batch.labels, batch.find, batch.natoms, lr)


def compiled_batch_loss() -> Callable:
    """`batch_loss` under torch.compile: forces, virial and loss in one graph each way (two when the fused
    embedding kernels sit between). The rate is always passed as a tensor, so a new rate needs no new graph."""
    compiled = torch.compile(batch_loss, dynamic=False)

    def run(model, loss, batch, lr, create_graph: bool) -> tuple[Tensor, dict[str, Tensor]]:
        if not isinstance(lr, Tensor):
            lr = torch.tensor(lr, dtype=torch.float64, device=batch.pairs.rij.device)
        return compiled(model, loss, batch, lr, create_graph)

    return run


def compile_or_fall_back(model, sampler, loss) -> Callable:
    """The compiled `batch_loss`, after running the largest batch through it as the training step and validation
    will (the compilations their first calls would do); if that fails (no C compiler, an unsupported operator)
    the uncompiled `batch_loss`, with a warning, instead of a stopped run."""
    embed_fn = model.embed_fn
    model.compile_forces()  # keeps fused kernels out of the graphs; inlined where the whole loss is compiled
    run = compiled_batch_loss()
    batch = largest_batch(sampler)
    params = [p for p in model.parameters() if p.requires_grad]
    try:
        torch.autograd.grad(run(model, loss, batch, loss.start_lr, True)[0], params)
        run(model, loss, batch, loss.start_lr, False)  # validation's graph, called as validation calls it
    except Exception as err:  # any compiler failure: the uncompiled path computes the same
        model.pair_energy_fn, model.embed_fn = analytic.energy_and_pair_grad, embed_fn
        log.warning("torch.compile failed (%s: %s); training goes on uncompiled", type(err).__name__,
                    str(err).splitlines()[0] if str(err) else "")
        return batch_loss
    log.info("forces and loss compiled with torch.compile (training.enable_compile or --compile; automatic for "
             "float64 GPU runs of %d steps or more)", COMPILE_MIN_STEPS)
    return run
