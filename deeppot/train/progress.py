"""Training-loop bookkeeping: wall time per display interval and ETA, and the terminal progress bar."""

from __future__ import annotations

import logging
import sys
import time

from deeppot.train.lcurve import eta_seconds

log = logging.getLogger("deeppot")


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
