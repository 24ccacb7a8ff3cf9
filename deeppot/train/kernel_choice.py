"""The embedding net of a GPU training run: the fused Triton kernels or PyTorch's, chosen by timing both.

The fused kernels are several times faster on the shapes they were written for (the examples' three-layer nets), but
an odd shape can turn that around (embedding [10, 20, 40], axis_neuron 8, batch 3: 2.3 ms a step fused against
1.8 ms with PyTorch on an H100). So by default (`fused_kernels=None`, "auto") the trainer times the force-training
pass of one training batch (forward, forces with create_graph, the parameter gradient: what dominates a step) with
each embedding and keeps the faster. Where the step will be replayed from CUDA graphs, the timed pass is replayed
from a graph too: graphs remove the launch overhead that the fused kernels otherwise save, so eager timings would
favour them. The weights are untouched (gradients are returned by autograd.grad, never accumulated into .grad).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor

from deeppot.cuda_graph import capture
from deeppot.train.graph_step import batch_shapes

log = logging.getLogger(__name__)

ROUNDS = 2  # each embedding is timed this many times, alternating, to even out clock and cache effects
REPEATS = 10  # passes per timing
BUDGET_MS = 100.0  # ... or fewer, once they have taken this long
CACHE_ENV = "DEEPPOT_CACHE_DIR"  # where remembered choices live; default $XDG_CACHE_HOME/deeppot or ~/.cache/deeppot


def cache_file() -> Path:
    root = os.environ.get(CACHE_ENV) or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "deeppot"
    return Path(root) / "embedding_choice.json"


def choice_key(model, pairs, graphed: bool) -> str:
    """What the timings depend on: a stale entry (new GPU, software, kernels or shapes) is never matched."""
    from deeppot.kernels import embedding

    d, f = model.descriptor, model.fitting
    try:
        triton = importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        triton = "none"
    kernels = hashlib.sha1(Path(embedding.__file__).read_bytes()).hexdigest()[:12]
    device = pairs.rij.device
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else device.type
    return " | ".join([gpu, f"torch {torch.__version__}",
                       f"triton {triton}", f"kernels {kernels}", f"{d.dtype} / {f.dtype}", f"sel {d.sel}",
                       f"neuron {d.neuron} {d.activation_function} resnet_dt {d.resnet_dt}",
                       f"axis {d.axis_neuron}", f"one_side {d.type_one_side}", f"exclude {d.exclude_types}",
                       f"fitting {f.neuron}", f"pairs {list(pairs.rij.shape)}", f"graphed {graphed}"])


def read_choices(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def remember_choice(path: Path, key: str, timings: dict[str, float]) -> None:
    """Add one decision to the file, atomically (a concurrent run reads the old or the new file, never half);
    a file that cannot be written only costs the next run its timing."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        choices = {**read_choices(path), key: timings}
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as tmp:
            json.dump(choices, tmp, indent=1)
        os.replace(tmp.name, path)
    except OSError as err:
        log.debug("could not remember the embedding choice in %s: %s", path, err)


def force_training_pass(model, pairs) -> Callable[[], tuple[Tensor, ...]]:
    """One pass like the training step's: energy and forces (create_graph), then gradients of a loss-like sum."""
    params = [p for p in model.parameters() if p.requires_grad]

    def run() -> tuple[Tensor, ...]:
        pred = model.forward_pairs(pairs, create_graph=True)
        objective = pred["energy"].square().sum() + pred["force"].square().sum() + pred["virial"].square().sum()
        return torch.autograd.grad(objective, params)

    return run


def time_pass(run: Callable[[], object], graphed: bool, repeats: int = REPEATS,
              budget_ms: float = BUDGET_MS) -> float:
    """Median milliseconds of run() on the current CUDA device, eager or replayed from a CUDA graph: `repeats`
    timed passes, fewer once they have taken `budget_ms` (a large frame's pass is timed once or twice)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the capture stream, as graph capture requires
        run()
    torch.cuda.current_stream().wait_stream(side)
    if graphed:
        graph = torch.cuda.CUDAGraph()
        with capture(graph):
            run()
        run = graph.replay
    times: list[float] = []
    while len(times) < repeats and sum(times) < budget_ms:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def compare(timers: dict[str, Callable[[], float]], rounds: int = ROUNDS) -> dict[str, float]:
    """The best of `rounds` timings of each timer, the timers called in turn within each round."""
    best = {name: float("inf") for name in timers}
    for _ in range(rounds):
        for name, timer in timers.items():
            best[name] = min(best[name], timer())
    return best


def choose_embedding(model, pairs, tf32: bool, graphed: bool,
                     agree: Callable[[Tensor], Tensor] = lambda t: t, cache: Path | None = None) -> bool:
    """Time the force-training pass with the fused and the PyTorch embedding; keep the faster in `model`.

    Returns whether the fused kernels are kept (False also when they cannot run). `agree` combines the timings of
    data-parallel ranks (a sum over ranks; the same collective on every rank), so that every rank makes the same
    choice. `cache`: a file of remembered choices (`cache_file()`), read before timing and added to after.
    """
    from deeppot.model import analytic

    if not model.use_fused_kernels(pairs.rij.device, tf32=tf32):
        log.info("embedding net: PyTorch (the fused kernels need 3 tanh layers, resnet_dt false and Triton)")
        return False
    fused_fn = model.embed_fn
    key = choice_key(model, pairs, graphed) if cache is not None else None
    timings = read_choices(cache).get(key) if key is not None else None
    remembered = timings is not None
    if not remembered:
        timings = time_both(model, pairs, graphed, fused_fn, agree)
        if key is not None:
            remember_choice(cache, key, timings)
    fused = timings["fused"] <= timings["pytorch"]
    model.embed_fn = fused_fn if fused else analytic.embed_all
    log.info("embedding net: %s (a force-training pass of one batch%s: fused Triton kernels %.3f ms, "
             "PyTorch %.3f ms%s)", "fused Triton kernels" if fused else "PyTorch",
             ", replayed from a CUDA graph" if graphed else "", timings["fused"], timings["pytorch"],
             f"; timed by an earlier run, remembered in {cache}" if remembered else "")
    return fused


def time_both(model, pairs, graphed: bool, fused_fn, agree: Callable[[Tensor], Tensor]) -> dict:
    """Best milliseconds of the pass with each embedding, combined over ranks by `agree`."""
    from deeppot.model import analytic

    run = force_training_pass(model, pairs)

    def timer(embed_fn) -> Callable[[], float]:
        def timed() -> float:
            model.embed_fn = embed_fn
            return time_pass(run, graphed)

        return timed

    best = compare({"fused": timer(fused_fn), "pytorch": timer(analytic.embed_all)})
    fused_ms, torch_ms = agree(torch.tensor([best["fused"], best["pytorch"]], device=pairs.rij.device)).tolist()
    return {"fused": fused_ms, "pytorch": torch_ms}


def on_cuda(sampler) -> bool:
    return sampler.stores[0].device.type == "cuda"


def choose_for_sampler(model, sampler, graphed: bool, agree: Callable[[Tensor], Tensor] = lambda t: t,
                       cache: Path | None = None) -> bool:
    """choose_embedding on the largest batch (atoms x frames) that the training sampler can draw; on CUDA
    devices only (the Triton interpreter, TRITON_INTERPRET=1 in tests, runs the kernels on a CPU, but not fast)."""
    if not on_cuda(sampler):
        return False
    pairs = largest_batch(sampler).pairs
    return choose_embedding(model, pairs, tf32=False, graphed=graphed, agree=agree, cache=cache)


def largest_batch(sampler):
    """The largest batch (atoms x frames) that the sampler can draw."""
    store_id, frames = max(batch_shapes(sampler), key=lambda s: sampler.stores[s[0]].natoms * len(s[1]))
    store = sampler.stores[store_id]
    store.build(frames)
    return store.gather(torch.as_tensor(frames, device=store.device))
