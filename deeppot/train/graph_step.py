"""The whole training step captured in CUDA graphs and replayed: the fast path of `Trainer.step`.

A DeePMD training step is hundreds of tiny kernels (embedding nets, their double backward, Adam), so on a GPU its
time is launch overhead, not arithmetic. Capturing forward, forces (autograd with create_graph), loss, backward,
gradient clipping and the fused Adam update into one CUDA graph turns them into a single launch per step.

One graph per (frame store, batch size): the graph gathers its batch from the store with a device index tensor
and reads the learning rate from device scalars, all in one buffer (`StepInputs`) that the host refreshes with one
copy before each replay, so the host never waits for the device. Graphs share one memory pool; they are replayed
one at a time and each one's outputs (the metrics) are read before the next replay, which is what makes sharing
safe.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from deeppot.cuda_graph import capture

log = logging.getLogger(__name__)

WARMUP_ITERS = 3  # eager iterations on a side stream before capture (lets autograd and cuBLAS set themselves up)


class StepInputs:
    """What the host hands a replayed graph, in one device buffer of 8-byte words: the batch's frame indices
    (`index(n)`), the learning rate as the loss reads it (`lr`, float64) and as fused Adam does (`adam_lr`, float32,
    times the workers' scale). One host-to-device copy a step sets them all (a copy and two fills were three
    operations between replays, ~5 us of a step)."""

    def __init__(self, capacity: int, lr: float, lr_scale: float, device: torch.device) -> None:
        self.capacity, self.lr_scale = capacity, lr_scale
        self.host = np.zeros(capacity + 2, dtype=np.int64)
        self.words = torch.zeros(capacity + 2, dtype=torch.long, device=device)
        self.lr = self.words[capacity:capacity + 1].view(torch.float64)[0]
        self.adam_lr = self.words[capacity + 1:capacity + 2].view(torch.float32)[0]
        self.stage(np.zeros(0, dtype=np.int64), lr)

    def index(self, n: int) -> Tensor:
        return self.words[:n]

    def stage(self, frames: np.ndarray, lr: float) -> None:
        if len(frames) > self.capacity:
            raise ValueError(f"a batch of {len(frames)} frames; the step's inputs hold {self.capacity}")
        self.host[:len(frames)] = frames
        self.host[self.capacity:].view(np.float64)[0] = lr
        self.host[self.capacity + 1:].view(np.float32)[0] = lr * self.lr_scale
        # pageable host -> device copy that does not wait for the device (the data is staged at once)
        self.words.copy_(torch.from_numpy(self.host), non_blocking=True)


@dataclass
class _Captured:
    graph: torch.cuda.CUDAGraph
    index: Tensor               # (nf,) long, the frames gathered by the graph
    metrics: dict[str, Tensor]  # written by every replay


class _Replayer:
    """One captured graph per (frame store, batch size) of a sampler; `_body` is what gets captured."""

    warmup_iters = 1

    def __init__(self, trainer, sampler, pool) -> None:
        self.tr, self.sampler, self.pool = trainer, sampler, pool
        self.graphs: dict[tuple[int, int], _Captured] = {}

    def replay(self, lr: float) -> tuple[dict[str, Tensor], int]:
        """Replay the graph of the sampler's next batch; its metrics (valid until the next replay), natoms."""
        store_id, frames = self.sampler.next_index()
        captured = self.graphs.get((store_id, len(frames)))
        if captured is None:
            captured = self._capture(store_id, frames)
        self.tr.step_inputs.stage(frames, lr)
        captured.graph.replay()
        return captured.metrics, self.sampler.stores[store_id].natoms

    def _before_run(self) -> None:
        """Called before each warm-up iteration and before the capture."""

    def _body(self, store_id: int, index: Tensor) -> dict[str, Tensor]:
        raise NotImplementedError

    def _capture(self, store_id: int, frames: np.ndarray) -> _Captured:
        self.tr.step_inputs.stage(frames, self.tr.lr.start_lr)
        index = self.tr.step_inputs.index(len(frames))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(self.warmup_iters):
                self._before_run()
                self._body(store_id, index)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        self._before_run()
        with capture(graph, pool=self.pool):
            metrics = self._body(store_id, index)
        log.info("captured %s for store %d, batch of %d frame(s)", type(self).__name__, store_id, len(frames))
        captured = _Captured(graph, index, metrics)
        self.graphs[(store_id, len(frames))] = captured
        return captured


def batch_shapes(sampler) -> list[tuple[int, np.ndarray]]:
    """(store id, example frames) for every (store, batch size) the sampler can draw, in a fixed order.

    A system of nframes frames with batch size bs gives batches of min(bs, nframes) frames and, at the end of each
    epoch, one of nframes % bs (DataSampler's FrameSampler, spec §1.3).
    """
    shapes: dict[tuple[int, int], np.ndarray] = {}
    for system, bs, (store_id, offset) in zip(sampler.systems, sampler.batch_sizes, sampler.where, strict=True):
        for size in {min(bs, system.nframes), system.nframes % bs} - {0}:
            shapes.setdefault((store_id, size), offset + np.arange(size))
    return [(store_id, shapes[(store_id, size)]) for store_id, size in sorted(shapes)]


def batch_capacity(*samplers) -> int:
    """The most frames of any batch the samplers (None: none) can draw."""
    return max(len(frames) for s in samplers if s is not None for _, frames in batch_shapes(s))


class GraphedStep(_Replayer):
    """Callable like `Trainer.step`: runs one optimisation step by replaying a captured graph."""

    warmup_iters = WARMUP_ITERS

    def __init__(self, trainer) -> None:
        super().__init__(trainer, trainer.train_data, torch.cuda.graph_pool_handle())

    def __call__(self, step: int) -> dict[str, Tensor]:
        return self.replay(self.tr.lr.value(step))[0]

    def capture_all(self) -> None:
        """Capture the graph of every (store, batch size) the sampler can draw, now, in one order on all ranks.

        Lazy capture would let one rank run its warm-up and capture (whose collectives do not execute) while
        another replays a graph whose all-reduce does: the collectives would pair up wrongly and hang.
        """
        for store_id, frames in batch_shapes(self.sampler):
            if (store_id, len(frames)) not in self.graphs:
                self._capture(store_id, frames)

    def _before_run(self) -> None:
        # the graph allocates (and on replay overwrites) the gradients
        self.tr.optimizer.zero_grad(set_to_none=True)

    def _body(self, store_id: int, index: Tensor) -> dict[str, Tensor]:
        tr = self.tr
        batch = tr.train_data.stores[store_id].gather(index)
        loss, metrics = tr.batch_loss(tr.model, tr.loss, batch, tr.step_inputs.lr, True)
        loss.backward()
        # data-parallel: the gradient all-reduce is captured with the rest (NCCL collectives are capturable);
        # capture_all makes every rank record and replay its collectives in the same order
        tr.reduce_gradients()
        tr.clip_gradients()
        tr.optimizer.step()
        return metrics

    def _capture(self, store_id: int, frames: np.ndarray) -> _Captured:
        saved = self._snapshot()
        optimizer = self.tr.optimizer  # FlatAdam reads the captured gradients in place; torch.optim's (ZeRO) copies
        with optimizer.captured_steps() if hasattr(optimizer, "captured_steps") else contextlib.nullcontext():
            captured = super()._capture(store_id, frames)
        self._restore(saved)  # the warm-up updates must not count as training steps
        return captured

    def _snapshot(self) -> tuple[list[Tensor], dict[int, dict[str, Tensor]]]:
        params = [p.detach().clone() for p in self.tr.model.parameters()]
        opt_state = {id(p): {k: v.clone() for k, v in self.tr.optimizer.state[p].items()}
                     for p in self.tr.model.parameters() if p in self.tr.optimizer.state}
        return params, opt_state

    @torch.no_grad()
    def _restore(self, saved: tuple[list[Tensor], dict[int, dict[str, Tensor]]]) -> None:
        params, opt_state = saved
        for p, value in zip(self.tr.model.parameters(), params, strict=True):
            p.copy_(value)
            state = self.tr.optimizer.state.get(p, {})
            before = opt_state.get(id(p))
            for k, v in state.items():  # copy in place: the graph holds these tensors' addresses
                v.copy_(before[k]) if before is not None else v.zero_()


class GraphedMetrics(_Replayer):
    """Validation metrics of the next batch (forward, forces, loss; no update), replayed from CUDA graphs."""

    def __call__(self, lr: float) -> tuple[dict[str, Tensor], int]:
        return self.replay(lr)

    def _body(self, store_id: int, index: Tensor) -> dict[str, Tensor]:
        batch = self.sampler.stores[store_id].gather(index)
        return self.tr.batch_loss(self.tr.model, self.tr.loss, batch, self.tr.step_inputs.lr, False)[1]
