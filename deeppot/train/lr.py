"""The `exp` learning-rate schedule with linear warmup (spec §8).

With lr0 = start_lr, W = warmup_steps, T = numb_steps − W and t the 0-based step:

    t < W:   lr(t) = f·lr0 + (lr0 − f·lr0)·t/W                        (f = warmup_start_factor)
    t ≥ W:   lr(t) = max(lr0 · decay_rate^k, stop_lr),  k = floor((t − W)/decay_steps)  (smooth: no floor)

decay_steps is reset to 100 or T//100 + 1 when it is ≥ T and no decay_rate is given, and decay_rate defaults to
exp(ln(stop_lr/lr0) / (T/decay_steps)), so the schedule reaches stop_lr at t = numb_steps.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import torch

from deeppot.config.schema import ConfigError

__all__ = ["ExpDecayLR", "build_lr"]

_MIN_STOP_LR = 1e-10  # stop_lr is clamped to this inside the log, so stop_lr = 0 still gives a finite rate


@dataclass(frozen=True)
class ExpDecayLR:
    """Derived `exp` schedule; build it with `build_lr`. Rates in the optimizer's units (1/step scale)."""

    start_lr: float
    stop_lr: float
    decay_steps: int  # after the reset rule
    decay_rate: float
    warmup_steps: int
    warmup_start_lr: float  # warmup_start_factor · start_lr
    smooth: bool
    numb_steps: int

    def value(self, step: int) -> float:
        """Learning rate used at 0-based `step` (Python float)."""
        if step < self.warmup_steps:
            return self.warmup_start_lr + (self.start_lr - self.warmup_start_lr) * step / self.warmup_steps
        t = step - self.warmup_steps
        exponent = t / self.decay_steps if self.smooth else float(t // self.decay_steps)
        return max(self.start_lr * self.decay_rate**exponent, self.stop_lr)

    def tensor(self, step: torch.Tensor) -> torch.Tensor:
        """`value` on the device: float64 tensor shaped like `step` (int or float steps), with no host sync."""
        s = step.to(torch.float64)
        t = torch.clamp(s - self.warmup_steps, min=0.0)
        exponent = t / self.decay_steps if self.smooth else torch.floor(t / self.decay_steps)
        rate = torch.tensor(self.decay_rate, dtype=torch.float64, device=step.device)
        decayed = torch.clamp(self.start_lr * torch.pow(rate, exponent), min=self.stop_lr)
        if self.warmup_steps == 0:
            return decayed
        warm = self.warmup_start_lr + (self.start_lr - self.warmup_start_lr) * s / self.warmup_steps
        return torch.where(s < self.warmup_steps, warm, decayed)

    def describe(self) -> dict[str, Any]:
        """The derived values, for the one log line at start-up (decay_steps after the reset, decay_rate)."""
        last = self.value(self.numb_steps - 1) if self.numb_steps > 0 else self.start_lr
        return {"type": "exp", **asdict(self), "decay_phase_steps": self.numb_steps - self.warmup_steps,
                "last_lr": last}


def build_lr(lr_section: Mapping[str, Any], numb_steps: int) -> ExpDecayLR:
    """Derive the schedule from a normalised `learning_rate` section and the total number of steps."""
    if lr_section.get("type", "exp") != "exp":
        raise ConfigError(f"learning_rate.type: {lr_section['type']!r} is not supported by deeppot; only 'exp' is")
    if numb_steps < 0:
        raise ConfigError(f"training.numb_steps: must be >= 0 (got {numb_steps})")
    start_lr = float(lr_section["start_lr"])
    stop_lr = _stop_lr(lr_section, start_lr)
    warmup_steps = _warmup_steps(lr_section, numb_steps)
    decay_total = numb_steps - warmup_steps
    decay_steps, decay_rate = _decay(lr_section, start_lr, stop_lr, decay_total)
    return ExpDecayLR(start_lr=start_lr, stop_lr=stop_lr, decay_steps=decay_steps, decay_rate=decay_rate,
                      warmup_steps=warmup_steps,
                      warmup_start_lr=float(lr_section.get("warmup_start_factor", 0.0)) * start_lr,
                      smooth=bool(lr_section.get("smooth", False)), numb_steps=numb_steps)


def _stop_lr(lr: Mapping[str, Any], start_lr: float) -> float:
    if lr.get("stop_lr_ratio") is not None:
        if lr.get("stop_lr") is not None:
            raise ConfigError("learning_rate.stop_lr: stop_lr and stop_lr_ratio are mutually exclusive; give one")
        return start_lr * float(lr["stop_lr_ratio"])
    return float(lr["stop_lr"]) if lr.get("stop_lr") is not None else 5e-8


def _warmup_steps(lr: Mapping[str, Any], numb_steps: int) -> int:
    ratio = lr.get("warmup_ratio")
    steps = int(ratio * numb_steps) if ratio is not None else int(lr.get("warmup_steps", 0))
    key = "warmup_ratio" if ratio is not None else "warmup_steps"
    if steps > 0 and steps >= numb_steps:
        raise ConfigError(f"learning_rate.{key}: gives {steps} warmup steps, which must be fewer than "
                          f"training.numb_steps ({numb_steps})")
    return steps


def _decay(lr: Mapping[str, Any], start_lr: float, stop_lr: float, decay_total: int) -> tuple[int, float]:
    """(decay_steps, decay_rate) with DeePMD's reset of decay_steps for runs shorter than one decay period."""
    decay_steps = int(lr.get("decay_steps", 5000))
    given_rate = lr.get("decay_rate")
    if given_rate is None and decay_steps >= decay_total:
        decay_steps = 100 if decay_total // 10 > 100 else decay_total // 100 + 1
    if given_rate is not None:
        return decay_steps, float(given_rate)
    if decay_total == 0:
        return decay_steps, 1.0  # no decay phase
    ratio = max(stop_lr, _MIN_STOP_LR) / start_lr
    return decay_steps, math.exp(math.log(ratio) / (decay_total / decay_steps))
