"""Adam and AdamW as PyTorch's fused kernel computes them, without `torch.optim`.

The first `torch.optim` optimizer a process builds or steps imports `torch._dynamo` (its methods are wrapped to
keep Dynamo out), which took 4-5 s of the start-up of a GPU training on an H100 (run 33): a third of the time to
the first step. `FusedAdam` calls the same fused update (`torch._fused_adam_` / `torch._fused_adamw_`, what
`torch.optim.Adam(fused=True)` launches) and keeps its state and `state_dict` in `torch.optim`'s layout, so the
updates are bit for bit those of `torch.optim.Adam(fused=True)` and checkpoints load into either
(`tests/train/test_adam.py`).
"""

from __future__ import annotations

import contextlib
import functools
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

if TYPE_CHECKING:
    from deeppot.kernels.adam import GradTable

# Elements of one piece of a parameter in the fused update. Torch's multi-tensor kernel gives each 65,536-element
# chunk of a tensor one block, so copper's ~0.5M parameters in a few large matrices were updated by ~8 blocks.
# Smaller pieces (views) make more blocks; the update is elementwise, so the numbers are the same bit for bit. On an
# H100 (run 74, the update alone): copper float32 29.5 -> 19.0 us (pieces of 2048-32768: 17.7-30.8), water
# float64's ~1M parameters 58.6 -> 59.9 us (unchanged: its float64 arithmetic, not the blocks, bounds it).
PIECE = 8192


def _pieces(t: Tensor) -> tuple[Tensor, ...]:
    """t as contiguous views of at most PIECE elements (t itself when small or strided)."""
    if t.numel() <= PIECE or not t.is_contiguous():
        return (t,)
    return t.view(-1).split(PIECE)


class FusedAdam:
    """Adam (AdamW with decoupled=True) on one parameter group, updated by one fused kernel per dtype.

    lr may be a device tensor that the caller refills (a CUDA graph replays the update with the current rate);
    the update then reads it there, as torch.optim.Adam(fused=True, capturable=True) does.
    """

    def __init__(self, params: Iterable[nn.Parameter], lr: float | Tensor, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, decoupled: bool = False) -> None:
        self.param_groups = [{"params": list(params), "lr": lr, "betas": tuple(betas), "eps": eps,
                              "weight_decay": weight_decay, "amsgrad": False, "maximize": False, "foreach": None,
                              "capturable": isinstance(lr, Tensor), "differentiable": False, "fused": True,
                              "decoupled_weight_decay": decoupled}]
        self.state: dict[Tensor, dict[str, Tensor]] = defaultdict(dict)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.param_groups[0]["params"]:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        group = self.param_groups[0]
        by_dtype: dict[torch.dtype, list[list[Tensor]]] = {}
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self._state(p)
            lists = by_dtype.setdefault(p.dtype, [[], [], [], [], [], []])
            pieces = [_pieces(t) for t in (p, p.grad, state["exp_avg"], state["exp_avg_sq"])]
            if len({len(q) for q in pieces}) > 1:  # a strided tensor among them: the parameter whole
                pieces = [(p,), (p.grad,), (state["exp_avg"],), (state["exp_avg_sq"],)]
            for lst, q in zip(lists, pieces, strict=False):
                lst.extend(q)
            lists[4].extend([state["step"]] * len(pieces[0]))  # each piece reads its parameter's step count
            lists[5].append(state["step"])
        update = torch._fused_adamw_ if group["decoupled_weight_decay"] else torch._fused_adam_
        beta1, beta2 = group["betas"]
        for params, grads, exp_avgs, exp_avg_sqs, piece_steps, steps in by_dtype.values():
            torch._foreach_add_(steps, 1)
            update(params, grads, exp_avgs, exp_avg_sqs, [], piece_steps, amsgrad=False, lr=group["lr"],
                   beta1=beta1, beta2=beta2, weight_decay=group["weight_decay"], eps=group["eps"], maximize=False,
                   grad_scale=None, found_inf=None)

    def captured_steps(self) -> contextlib.AbstractContextManager:
        """Wraps a CUDA graph's warm-up and capture of steps (FlatAdam then reads the gradients in place)."""
        return contextlib.nullcontext()

    def _state(self, p: Tensor) -> dict[str, Tensor]:
        state = self.state[p]
        if not state:  # as torch.optim.Adam's fused path: a float32 step counter on the parameter's device
            state["step"] = torch.zeros((), dtype=torch.float32, device=p.device)
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        return state

    def state_dict(self) -> dict[str, Any]:
        """torch.optim's layout: per-parameter state by position, the group's settings with parameter positions."""
        group = self.param_groups[0]
        index = {id(p): i for i, p in enumerate(group["params"])}
        return {"state": {index[id(p)]: dict(s) for p, s in self.state.items() if s},
                "param_groups": [{**{k: v for k, v in group.items() if k != "params"},
                                  "params": list(range(len(group["params"])))}]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """The moments and step counts of a saved torch.optim Adam or FusedAdam (copied into place, so a captured
        update keeps reading the same tensors); the rate and the other settings stay this run's (input.json's)."""
        params = self.param_groups[0]["params"]
        saved = state_dict["param_groups"]
        if len(saved) != 1 or len(saved[0]["params"]) != len(params):
            raise ValueError(f"the optimizer state holds {sum(len(g['params']) for g in saved)} parameters in "
                             f"{len(saved)} group(s); this model has {len(params)} in one")
        for i, p in enumerate(params):
            if i not in state_dict["state"]:
                continue
            state = self._state(p)
            for key, value in state_dict["state"][i].items():
                state[key].copy_(value)


class FlatAdam(FusedAdam):
    """FusedAdam whose parameters, gradients and moments of each dtype lie in one flat buffer, updated by one
    Triton kernel (`deeppot.kernels.adam`): one launch at memory speed instead of torch's 2-4 multi-tensor launches.

    The parameters become views of the buffer (their values unchanged). Each step copies the gradients into it
    (one `torch.cat`), except in a CUDA graph: there the kernel reads each gradient where the graph's backward
    writes it, from a table of addresses written after the capture (`captured_steps`), because the graph replays
    its allocations at the same addresses. Each parameter keeps its own step count, and one without a gradient is
    left as it is, as in torch's update; the state and `state_dict` keep FusedAdam's per-parameter layout (views of
    the buffers). The arithmetic is torch's, but not bit for bit: after 20 updates on an H100 the parameters differ
    from torch's by up to 4 units in the last place (run 92; tests/kernels/test_adam.py).
    """

    def __init__(self, params: Iterable[nn.Parameter], lr: float | Tensor, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, decoupled: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, decoupled)
        group = self.param_groups[0]
        by_dtype: dict[torch.dtype, list[nn.Parameter]] = {}
        for p in group["params"]:
            by_dtype.setdefault(p.dtype, []).append(p)
        self.flats = [_FlatParams(ps, self.state) for ps in by_dtype.values()]
        device = group["params"][0].device
        # betas, eps and weight decay as the kernel reads them, fixed at construction (the rate may change)
        self._hyper = torch.tensor([*group["betas"], eps, weight_decay], dtype=torch.float64, device=device)
        self._decay = weight_decay != 0
        self._lr = torch.zeros(1, dtype=torch.float64, device=device)  # where a float rate is put each step
        # read the gradients where autograd left them instead of copying them into the flat buffer; None: in a
        # capture within `captured_steps` (the steps that matter; an eager table costs a host-to-device copy)
        self.grads_in_place: bool | None = None

    @torch.no_grad()
    def step(self) -> None:
        from deeppot.kernels.adam import adam_update

        group = self.param_groups[0]
        lr = group["lr"]
        if not isinstance(lr, Tensor):  # a rate the caller set this step
            self._lr.fill_(lr)
            lr = self._lr
        capturing = self.flats[0].param.is_cuda and torch.cuda.is_current_stream_capturing()
        in_place = capturing if self.grads_in_place is None else self.grads_in_place  # a capture outside
        # `captured_steps` has no table to read (`grad_table` gives None) and copies
        for flat in self.flats:
            live = flat.live_flags()
            grad = flat.grad_table(capturing) if in_place else None
            flat.steps.add_(live)
            adam_update(flat.param, flat.gather_grads() if grad is None else grad, flat.exp_avg, flat.exp_avg_sq,
                        flat.owner, flat.steps, live, lr, self._hyper, group["decoupled_weight_decay"], self._decay)

    def mark_updated(self) -> None:
        """Bump the parameters' version counters. The kernel writes them through the flat buffer, which torch does
        not count as an in-place change of the parameters (and a CUDA graph's replays run no Python at all), so
        caches kept by version (the inference kernels' weight parts, `deeppot.kernels.precision.weight_parts`)
        would keep their old values: `Trainer.run` calls this once, after its last step (replayed steps run no
        Python in which to call it)."""
        torch.autograd.graph.increment_version(self.param_groups[0]["params"])

    @contextlib.contextmanager
    def captured_steps(self) -> Iterator[None]:
        """Within: a step captured in a CUDA graph reads the gradients in place; on leaving, the tables of their
        addresses are written (before the graph's first replay, which reads them). A capture outside this
        context copies the gradients, as an eager step does."""
        for flat in self.flats:
            flat.open_table()
        try:
            yield
        finally:
            for flat in self.flats:
                flat.fill_table()


def gpu_adam() -> type[FusedAdam]:
    """The update for parameters on a GPU: FlatAdam where Triton is installed, else FusedAdam."""
    from deeppot.kernels.embedding import triton

    return FlatAdam if triton is not None else FusedAdam


class _FlatParams:
    """One dtype's parameters moved into a flat buffer (segments padded to the kernel's BLOCK), with flat
    gradient and moment buffers, each parameter's step count and the owner of each BLOCK."""

    def __init__(self, params: list[nn.Parameter], state: dict[Tensor, dict[str, Tensor]]) -> None:
        from deeppot.kernels.adam import BLOCK

        p0 = params[0]
        sizes = [p.numel() for p in params]
        padded = [-(-n // BLOCK) * BLOCK for n in sizes]
        starts = [sum(padded[:k]) for k in range(len(params))]
        new = functools.partial(torch.zeros, sum(padded), dtype=p0.dtype, device=p0.device)
        self.param, self.grad, self.exp_avg, self.exp_avg_sq = new(), new(), new(), new()
        self.steps = torch.zeros(len(params), dtype=torch.float32, device=p0.device)
        self.owner = torch.repeat_interleave(torch.arange(len(params), dtype=torch.int32),
                                             torch.tensor(padded) // BLOCK).to(p0.device)
        self.first = (torch.tensor(starts) // BLOCK).to(dtype=torch.int32, device=p0.device)
        self.numel = torch.tensor(sizes, dtype=torch.int32, device=p0.device)
        self.params, self._live = params, {}
        self._spare: Tensor | None = None  # the next capture's gradient table
        self._unfilled: tuple[Tensor, list[int]] | None = None  # a captured table and the addresses it must hold
        self._captured: list[Tensor] = []  # held, so that no later capture reuses their memory
        zeros = torch.zeros(max(padded), dtype=p0.dtype, device=p0.device)
        self._fill = [(zeros[:n], zeros[:m - n]) for n, m in zip(sizes, padded, strict=True)]
        with torch.no_grad():
            for k, p in enumerate(params):
                segment = slice(starts[k], starts[k] + sizes[k])
                self.param[segment].copy_(p.reshape(-1))
                p.data = self.param[segment].view_as(p)
                state[p] = {"step": self.steps[k], "exp_avg": self.exp_avg[segment].view_as(p),
                            "exp_avg_sq": self.exp_avg_sq[segment].view_as(p)}

    def gather_grads(self) -> Tensor:
        """The gradients copied into the flat buffer (zeros for a parameter without one)."""
        pieces = []
        for p, (zeros, pad) in zip(self.params, self._fill, strict=True):
            pieces += [zeros if p.grad is None else p.grad.reshape(-1), pad]
        return torch.cat(pieces, out=self.grad)

    def live_flags(self) -> Tensor:
        """Whether each parameter has a gradient (int32 on the device; made once for each pattern of missing
        gradients: the warm-up steps before a CUDA graph's capture make the pattern the capture will see)."""
        key = tuple(p.grad is not None for p in self.params)
        if key not in self._live:
            self._live[key] = torch.tensor(key, dtype=torch.int32, device=self.grad.device)
        return self._live[key]

    def grad_table(self, capturing: bool) -> GradTable | None:
        """The gradients' addresses for the kernel to read them in place; None if one is not a contiguous tensor
        of the parameters' dtype, or in a capture without a table of its own (they are copied then)."""
        from deeppot.kernels.adam import GradTable

        grads = [p.grad for p in self.params]
        if any(g is not None and (g.dtype != self.grad.dtype or not g.is_contiguous()) for g in grads):
            return None
        addresses = [0 if g is None else g.data_ptr() for g in grads]
        if not capturing:
            return GradTable(torch.tensor(addresses, dtype=torch.int64).to(self.grad.device), self.first, self.numel)
        if self._spare is None:
            return None
        table, self._spare = self._spare, None
        self._unfilled = (table, addresses)
        return GradTable(table, self.first, self.numel)

    def open_table(self) -> None:
        """A table for the next capture, allocated before it: one allocated within would come from the graph's
        pool, where the replay's earlier tensors may share its memory and overwrite it (run 96). A host-to-device
        copy does not capture, so `fill_table` writes the addresses after the capture."""
        self._spare = torch.empty(len(self.params), dtype=torch.int64, device=self.grad.device)

    def fill_table(self) -> None:
        if self._unfilled is not None:
            table, addresses = self._unfilled
            table.copy_(torch.tensor(addresses, dtype=torch.int64))
            self._captured.append(table)
        self._spare = self._unfilled = None
