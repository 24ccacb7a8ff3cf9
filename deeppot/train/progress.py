"""Training-loop bookkeeping: where the start-up went, wall time per display interval and ETA, and the terminal
progress bar."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator

from deeppot.train.lcurve import eta_seconds

log = logging.getLogger("deeppot")


def process_age() -> float | None:
    """Seconds since this process started (interpreter start-up and imports included), where /proc tells it."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = float(f.read().rsplit(")", 1)[1].split()[19])  # field 22: start time after boot
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class StartupTimes:
    """Seconds spent in each start-up phase up to the end of the first step, logged once (where to look when the
    first step is slow to come)."""

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}
        self.t0, self.age0 = time.perf_counter(), process_age()  # age: interpreter start-up and imports

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - t0

    def report(self) -> None:
        total = time.perf_counter() - self.t0
        phases = dict(self.phases, other=total - sum(self.phases.values()))
        if self.age0 is not None:
            phases = {"before the trainer (Python, imports, CUDA)": self.age0, **phases}
        log.info("start-up to the end of the first step: %.2f s (%s)", sum(phases.values()),
                 ", ".join(f"{name} {seconds:.2f}" for name, seconds in phases.items()))


class Clock:
    """Wall time per display interval, ETA and the final average time per batch."""

    def __init__(self, numb_steps: int, start_step: int) -> None:
        self.numb_steps, self.start_step = numb_steps, start_step
        self.t0 = self.t_last = time.perf_counter()
        self.last_step, self.first_interval_steps = start_step, None
        self.t_first = None

    def interval(self, step: int) -> tuple[float, int | None]:
        now = time.perf_counter()
        wall, steps = now - self.t_last, step - self.last_step
        eta = eta_seconds(self.numb_steps, step, wall, steps) if self.last_step > self.start_step else None
        if self.t_first is None and step > self.start_step + 1:
            self.t_first, self.first_interval_steps = now, step - self.start_step
        self.t_last, self.last_step = now, step
        return wall, eta

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def report(self) -> None:
        total = self.numb_steps - self.start_step
        if self.t_first is not None and self.first_interval_steps < total:
            per = (time.perf_counter() - self.t_first) / (total - self.first_interval_steps)
            log.info("average training time: %.4f s/batch (%d batches excluded)", per, self.first_interval_steps)
        elif total > 0:
            log.info("average training time: %.4f s/batch", self.elapsed() / total)


class Progress:
    """A one-line progress bar on a terminal, redrawn at most twice a second."""

    def __init__(self, numb_steps: int, enabled: bool | None) -> None:
        self.numb_steps = numb_steps
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.t_draw = 0.0

    def update(self, step: int, clock: Clock) -> None:
        now = time.perf_counter()
        if not self.enabled or (now - self.t_draw < 0.5 and step < self.numb_steps):
            return
        self.t_draw = now
        done = step - clock.start_step
        rate = done / max(clock.elapsed(), 1e-9)
        eta = (self.numb_steps - step) / rate if rate > 0 else 0.0
        width = 30
        filled = int(width * step / self.numb_steps)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {step}/{self.numb_steps} "
                         f"{rate:6.1f} steps/s  eta {time.strftime('%H:%M:%S', time.gmtime(eta))}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
