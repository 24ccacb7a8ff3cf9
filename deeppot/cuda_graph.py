"""`capture`: `torch.cuda.graph` with Python's cyclic garbage collector held off for the capture.

Torch no longer collects garbage when a capture begins (`torch.compiler.config.force_cudagraph_gc` is off: a full
collection per capture is slow). An earlier CUDA graph that is only reachable from a reference cycle (a trainer and
its graphed step refer to each other) may then be freed by an automatic collection in the middle of another
capture, and destroying a graph is not permitted while a stream captures: the capture is invalidated
(`cudaErrorStreamCaptureInvalidated`, after "operation not permitted when stream is capturing (function reset)";
runs 186-189 saw it in training-graph tests that passed alone). Holding the collector off costs nothing; the
garbage is collected after the capture, when freeing a graph is allowed.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def capture(graph: torch.cuda.CUDAGraph, **kwargs) -> Iterator[None]:
    """Capture into graph (keywords as `torch.cuda.graph`'s: pool, stream) with the garbage collector off."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with torch.cuda.graph(graph, **kwargs):
            yield
    finally:
        if was_enabled:
            gc.enable()
