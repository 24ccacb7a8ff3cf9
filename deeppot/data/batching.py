"""Batch sizes (spec §1.4), system sampling probabilities (§1.5) and per-system frame batches (§1.3)."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

__all__ = ["FrameSampler", "nbatches", "resolve_batch_sizes", "system_probs"]


def _positive_int(value: Any, what: str) -> int:
    # bool is an int subclass; `True` as a batch size is a config mistake, not 1
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    return int(value)


def _parse_rule(spec: str) -> tuple[str, int]:
    """'auto' | 'auto:N' | 'max:N' | 'filter:N' -> (rule, N)."""
    if spec == "auto":
        return "auto", 32
    rule, sep, number = spec.partition(":")
    if rule == "mixed":
        raise ValueError(f"batch_size {spec!r}: 'mixed:N' is TensorFlow-only and not supported")
    if not sep or rule not in ("auto", "max", "filter") or not number.isdigit() or int(number) < 1:
        raise ValueError(f"batch_size {spec!r} is not an int, a list, auto, auto:N, max:N or filter:N (N > 0)")
    return rule, int(number)


def resolve_batch_sizes(spec: int | str | Sequence[int], natoms: Sequence[int]) -> list[int | None]:
    """Per-system batch size (frames per batch) from a `batch_size` value (spec §1.4).

    `natoms`: atoms per frame of each system. 'auto:N' -> ceil(N/natoms); 'max:N' -> max(1, N // natoms);
    'filter:N' -> None (system dropped) when natoms > N, else as 'max:N'. Bad values raise ValueError.
    """
    if isinstance(spec, str):
        rule, n = _parse_rule(spec)
        if rule == "auto":
            return [max(1, -(-n // nat)) for nat in natoms]
        sizes = [None if rule == "filter" and nat > n else max(1, n // nat) for nat in natoms]
        if natoms and all(s is None for s in sizes):
            raise ValueError(f"batch_size {spec!r} drops every system (natoms: {sorted(set(natoms))})")
        return sizes
    if isinstance(spec, Sequence):
        if len(spec) != len(natoms):
            raise ValueError(f"batch_size list has {len(spec)} entries for {len(natoms)} systems")
        return [_positive_int(b, f"batch_size[{i}]") for i, b in enumerate(spec)]
    return [_positive_int(spec, "batch_size")] * len(natoms)


def nbatches(nframes: int, batch_size: int) -> int:
    """Batches per epoch of one system, the last possibly short: ceil(nframes / batch_size) (spec §1.3)."""
    return math.ceil(nframes / _positive_int(batch_size, "batch_size"))


def _probs_from_sys_probs(nbatch: np.ndarray, sys_probs: Sequence[float]) -> np.ndarray:
    """Given entries as is; the remaining mass goes to negative ('auto') entries in proportion to nbatch."""
    given = np.asarray(sys_probs, dtype=np.float64)
    if given.shape != nbatch.shape:
        raise ValueError(f"sys_probs has {given.size} entries for {nbatch.size} systems")
    auto = given < 0
    assigned = given[~auto].sum()
    if assigned > 1.0 + 1e-8:  # tolerance as in DeePMD-kit (floating-point sums of user input)
        raise ValueError(f"sys_probs: the non-negative entries sum to {assigned} > 1")
    probs = np.where(auto, 0.0, given)
    rest = 1.0 - assigned
    if auto.any() and not np.isclose(rest, 0.0):
        probs[auto] = rest * nbatch[auto] / nbatch[auto].sum()
    if not np.isclose(probs.sum(), 1.0):
        raise ValueError(f"sys_probs {list(sys_probs)} sum to {probs.sum()}, not 1, and none is negative (auto)")
    return probs


def _parse_blocks(auto_prob: str, nsys: int) -> list[tuple[int, int, float]]:
    """'prob_sys_size;s0:e0:w0;...' -> [(s, e, w)], checked: 0 <= s < e <= nsys, w >= 0, blocks disjoint."""
    blocks, covered = [], np.zeros(nsys, dtype=bool)
    for text in auto_prob.split(";")[1:]:
        parts = text.split(":")
        try:
            start, end, weight = int(parts[0]), int(parts[1]), float(parts[2])
        except (ValueError, IndexError):
            raise ValueError(f"auto_prob {auto_prob!r}: block {text!r} is not 'start:end:weight'") from None
        if len(parts) != 3 or not 0 <= start < end <= nsys or weight < 0:
            raise ValueError(f"auto_prob {auto_prob!r}: bad block {text!r} for {nsys} systems")
        if covered[start:end].any():
            raise ValueError(f"auto_prob {auto_prob!r}: block {text!r} overlaps an earlier block")
        covered[start:end] = True
        blocks.append((start, end, weight))
    if not blocks or sum(w for _, _, w in blocks) <= 0:
        raise ValueError(f"auto_prob {auto_prob!r}: needs at least one block with a positive weight")
    return blocks


def _probs_sys_size(nbatch: np.ndarray, auto_prob: str) -> np.ndarray:
    """Blocks [s, e) get weight w / sum(w), shared inside a block in proportion to nbatch; others get 0."""
    blocks = _parse_blocks(auto_prob, nbatch.size)
    total = sum(w for _, _, w in blocks)
    probs = np.zeros(nbatch.size)
    for start, end, weight in blocks:
        probs[start:end] = weight / total * nbatch[start:end] / nbatch[start:end].sum()
    return probs


def system_probs(
    nbatch: Sequence[int], sys_probs: Sequence[float] | None = None, auto_prob: str = "prob_sys_size"
) -> np.ndarray:
    """Probability of drawing each system at a training step (spec §1.5), (nsys,) float64 summing to 1.

    `nbatch`: batches per epoch of each system (`nbatches`). `sys_probs` (one per system; negative = auto)
    takes precedence over `auto_prob` ('prob_uniform', 'prob_sys_size' or 'prob_sys_size;s:e:w;...').
    """
    counts = np.asarray(nbatch, dtype=np.float64)
    if counts.ndim != 1 or counts.size == 0 or (counts < 1).any():
        raise ValueError(f"nbatch must be a non-empty list of positive batch counts, got {list(nbatch)}")
    if sys_probs is not None:
        return _probs_from_sys_probs(counts, sys_probs)
    if auto_prob == "prob_uniform":
        return np.full(counts.size, 1.0 / counts.size)
    if auto_prob == "prob_sys_size":
        return counts / counts.sum()
    if auto_prob.startswith("prob_sys_size;"):
        return _probs_sys_size(counts, auto_prob)
    raise ValueError(f"auto_prob {auto_prob!r} is not prob_uniform, prob_sys_size or 'prob_sys_size;s:e:w;...'")


class FrameSampler:
    """Endless batches of frame indices of one system, like `DataLoader(shuffle=True, drop_last=False)`
    restarted whenever it is exhausted (spec §1.3).

    Each epoch is a fresh permutation of `range(nframes)` cut into batches of `batch_size`; the last batch of
    an epoch may be short. The sampler owns `rng` (give every sampler its own generator, e.g. from
    `np.random.default_rng(seed).spawn(nsys)`), so `state_dict()` captures all it needs to resume exactly.
    """

    def __init__(self, nframes: int, batch_size: int, rng: np.random.Generator) -> None:
        self.nframes = _positive_int(nframes, "nframes")
        self.batch_size = _positive_int(batch_size, "batch_size")
        self._rng = rng
        self._perm = np.empty(0, dtype=np.int64)
        self._pos = 0
        self.epoch = 0  # completed-or-started epochs: 1 after the first batch is drawn

    def __len__(self) -> int:
        return nbatches(self.nframes, self.batch_size)

    def __iter__(self) -> Iterator[np.ndarray]:
        return self

    def __next__(self) -> np.ndarray:
        """The next batch, (b,) int64 frame indices with 1 <= b <= batch_size."""
        if self._pos >= self._perm.size:  # epoch exhausted (or not started): draw the next permutation
            self._perm = self._rng.permutation(self.nframes).astype(np.int64)
            self._pos = 0
            self.epoch += 1
        batch = self._perm[self._pos : self._pos + self.batch_size]
        self._pos += batch.size
        return batch.copy()

    def state_dict(self) -> dict[str, Any]:
        """Plain Python values (lists, ints, str), safe for `torch.save` / `torch.load(weights_only=True)`."""
        return {
            "nframes": self.nframes,
            "batch_size": self.batch_size,
            "perm": self._perm.tolist(),
            "pos": self._pos,
            "epoch": self.epoch,
            "rng": copy.deepcopy(self._rng.bit_generator.state),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from `state_dict()`; the system must have the same frame count and batch size."""
        if (state["nframes"], state["batch_size"]) != (self.nframes, self.batch_size):
            raise ValueError(
                f"sampler state is for {state['nframes']} frames / batch {state['batch_size']}, "
                f"not {self.nframes} / {self.batch_size}"
            )
        self._rng.bit_generator.state = copy.deepcopy(state["rng"])
        self._perm = np.asarray(state["perm"], dtype=np.int64)
        self._pos = int(state["pos"])
        self.epoch = int(state["epoch"])
