"""lcurve.out and the training log lines in DeePMD-kit's exact format (spec §9.3, §9.4)."""

from __future__ import annotations

import datetime
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

import numpy as np

__all__ = ["LcurveWriter", "eta_seconds", "format_eta", "format_log_line", "read_lcurve"]

NAN_NOTE = "# If there is no available reference data, rmse_*_{val,trn} will print nan\n"


class LcurveWriter:
    """Appends one line per display step to lcurve.out, line-buffered (a crash loses no written line).

    The two header lines go before the first data line of every run, so a restarted run (`append=True`)
    repeats them in the middle of the file, as DeePMD does. Columns: step, then per metric key (sorted)
    `<key>_val <key>_trn` (only `<key>_trn` without validation data), then lr.
    """

    def __init__(self, path: str | os.PathLike, keys: Sequence[str], has_validation: bool,
                 append: bool = False) -> None:
        self.keys = sorted(keys)
        self.has_validation = has_validation
        self._file = open(path, "a" if append else "w", buffering=1)  # noqa: SIM115 (closed in close())
        self._header_written = False

    def header(self) -> str:
        """Both header lines, e.g. '# step       rmse_val    rmse_trn ...   lr      '."""
        line = "# " + "step".ljust(5)
        for k in self.keys:
            line += f"   {k + '_val':>11} {k + '_trn':>11}" if self.has_validation else f"   {k + '_trn':>11}"
        return line + "   " + "lr".ljust(8) + "\n" + NAN_NOTE

    def line(self, step: int, trn: Mapping[str, float], lr: float, val: Mapping[str, float] | None = None) -> str:
        """One data line; a metric missing from `trn`/`val` prints nan. `step` is the 1-based display step."""
        text = f"{step:7d}"
        for k in self.keys:
            t = trn.get(k, math.nan)
            if self.has_validation:
                text += "   %11.2e %11.2e" % ((val or {}).get(k, math.nan), t)  # noqa: UP031 (DeePMD's format)
            else:
                text += "   %11.2e" % t  # noqa: UP031
        return text + f"   {lr:8.1e}\n"

    def write(self, step: int, trn: Mapping[str, float], lr: float, val: Mapping[str, float] | None = None) -> None:
        """Write the header first if this run has not yet written it, then the data line."""
        if not self._header_written:
            self._file.write(self.header())
            self._header_written = True
        self._file.write(self.line(step, trn, lr, val))

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> LcurveWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def format_log_line(step: int, kind: str, metrics: Mapping[str, float], lr: float | None = None,
                    check_nan: bool = True) -> str:
    """'Batch {step:7d}: {kind}: rmse = 3.41e+01, rmse_e = ..., lr = 1.00e-03' (keys sorted, lr only if given).

    `kind` is "trn" or "val". As DeePMD does, a NaN total `rmse` raises RuntimeError("NaN detected at batch
    ...") when `check_nan`: training cannot recover from it.
    """
    body = ", ".join(f"{k} = {metrics[k]:8.2e}" for k in sorted(metrics))
    text = f"Batch {step:7d}: {kind}: {body}" + (f", lr = {lr:8.2e}" if lr is not None else "")
    if check_nan and math.isnan(metrics.get("rmse", 0.0)):
        raise RuntimeError(f"NaN detected at batch {step:7d}: {kind}. "
                           "Something went wrong, and it is meaningless to continue.")
    return text


def eta_seconds(numb_steps: int, step: int, interval_time: float, interval_steps: int) -> int:
    """Time left in s, extrapolated from the last display interval (not the run average: the first interval
    carries one-off start-up costs)."""
    return int((numb_steps - step) * interval_time / max(1, interval_steps))


def format_eta(step: int, wall_time: float, eta: int | None = None,
               now: datetime.datetime | None = None) -> str:
    """'Batch {step:7d}: total wall time = 12.34 s, eta = 1:02:03 at 2026-01-01 12:00'.

    `wall_time`: s since the previous display; `eta`: s left, None on the first display (then omitted);
    `now`: the local time the finish time is counted from (default: now).
    """
    text = f"Batch {step:7d}: total wall time = {wall_time:.2f} s"
    if eta is None:
        return text
    now = now if now is not None else datetime.datetime.now().astimezone()
    finish = now + datetime.timedelta(seconds=eta)
    return text + f", eta = {datetime.timedelta(seconds=eta)!s} at {finish:%Y-%m-%d %H:%M}"


def read_lcurve(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Columns of lcurve.out by header name (float64 arrays, every data row in file order).

    Column names come from the last '# step ...' header (a restart repeats it); rows must match its width.
    """
    names: list[str] = []
    rows: list[list[float]] = []
    for text in Path(path).read_text().splitlines():
        if text.startswith("# step"):
            names = text[1:].split()
        elif text.strip() and not text.startswith("#"):
            rows.append([float(x) for x in text.split()])
    if not names:
        raise ValueError(f"{path}: no '# step ...' header line")
    if any(len(row) != len(names) for row in rows):
        raise ValueError(f"{path}: a data row does not have the {len(names)} columns of the last header")
    data = np.array(rows, dtype=np.float64).reshape(len(rows), len(names))
    return {name: data[:, i] for i, name in enumerate(names)}
