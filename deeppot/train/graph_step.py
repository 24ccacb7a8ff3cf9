"""The whole training step captured in CUDA graphs and replayed: the fast path of `Trainer.step`.

A DeePMD training step is hundreds of tiny kernels (embedding nets, their double backward, Adam), so on a GPU its
time is launch overhead, not arithmetic. Capturing forward, forces (autograd with create_graph), loss, backward,
gradient clipping and the fused Adam update into one CUDA graph turns them into a single launch per step.

One graph per (frame store, batch size): the graph gathers its batch from the store with a device index tensor
that the host refreshes before each replay, and reads the learning rate from a device scalar, so the host never
waits for the device. Graphs share one memory pool; they are replayed one at a time and each one's outputs
(the metrics) are read before the next replay, which is what makes sharing safe.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

log = logging.getLogger(__name__)

WARMUP_ITERS = 3  # eager iterations on a side stream before capture (lets autograd and cuBLAS set themselves up)


@dataclass
class _Captured:
    graph: torch.cuda.CUDAGraph
    index: Tensor               # (nf,) long, the frames gathered by the graph
    metrics: dict[str, Tensor]  # written by every replay


class GraphedStep:
    """Callable like `Trainer.step`: runs one optimisation step by replaying a captured graph."""

    def __init__(self, trainer) -> None:
        self.tr = trainer
        self.device = trainer.opt.device
        self.lr = trainer.lr_tensor  # the optimizer's lr too: one device scalar, refreshed before each replay
        self.graphs: dict[tuple[int, int], _Captured] = {}
        self.pool = torch.cuda.graph_pool_handle()

    def __call__(self, step: int) -> dict[str, Tensor]:
        store_id, frames = self.tr.train_data.next_index()
        captured = self.graphs.get((store_id, len(frames)))
        if captured is None:
            captured = self._capture(store_id, frames)
        # pageable host -> device copy without waiting for the device (the data is staged at once)
        captured.index.copy_(torch.from_numpy(frames), non_blocking=True)
        lr = self.tr.lr.value(step)
        self.lr.fill_(lr)
        self.tr.adam_lr.fill_(lr)
        captured.graph.replay()
        return captured.metrics

    def _body(self, store_id: int, index: Tensor) -> dict[str, Tensor]:
        tr = self.tr
        batch = tr.train_data.stores[store_id].gather(index)
        pred = tr.model.forward_pairs(batch.pairs, create_graph=True)
        loss, metrics = tr.loss(pred, batch.labels, batch.find, batch.natoms, self.lr)
        loss.backward()
        tr.clip_gradients()
        tr.optimizer.step()
        return metrics

    def _capture(self, store_id: int, frames: np.ndarray) -> _Captured:
        index = torch.as_tensor(frames, device=self.device)
        saved = self._snapshot()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_ITERS):
                self.tr.optimizer.zero_grad(set_to_none=True)
                self._body(store_id, index)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        self.tr.optimizer.zero_grad(set_to_none=True)  # the graph allocates (and then overwrites) the gradients
        with torch.cuda.graph(graph, pool=self.pool):
            metrics = self._body(store_id, index)
        self._restore(saved)  # the warm-up updates must not count as training steps
        log.info("captured the training step for store %d, batch of %d frame(s)", store_id, len(frames))
        captured = _Captured(graph, index, metrics)
        self.graphs[(store_id, len(frames))] = captured
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


class GraphedMetrics:
    """Validation metrics of the next batch (forward, forces, loss; no update), replayed from CUDA graphs."""

    def __init__(self, trainer, sampler, pool) -> None:
        self.tr, self.sampler, self.pool = trainer, sampler, pool
        self.graphs: dict[tuple[int, int], _Captured] = {}

    def __call__(self, lr: float) -> tuple[dict[str, Tensor], int]:
        store_id, frames = self.sampler.next_index()
        captured = self.graphs.get((store_id, len(frames)))
        if captured is None:
            captured = self._capture(store_id, frames)
        captured.index.copy_(torch.from_numpy(frames), non_blocking=True)
        self.tr.lr_tensor.fill_(lr)
        captured.graph.replay()
        return captured.metrics, self.sampler.stores[store_id].natoms

    def _body(self, store_id: int, index: Tensor) -> dict[str, Tensor]:
        batch = self.sampler.stores[store_id].gather(index)
        pred = self.tr.model.forward_pairs(batch.pairs)
        return self.tr.loss(pred, batch.labels, batch.find, batch.natoms, self.tr.lr_tensor)[1]

    def _capture(self, store_id: int, frames: np.ndarray) -> _Captured:
        index = torch.as_tensor(frames, device=self.tr.opt.device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            self._body(store_id, index)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            metrics = self._body(store_id, index)
        captured = _Captured(graph, index, metrics)
        self.graphs[(store_id, len(frames))] = captured
        return captured
