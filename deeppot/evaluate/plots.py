"""Figures for `dp test --plot` (parity of predictions against labels) and for lcurve.out.

matplotlib is optional (`pip install deeppot[plot]`) and imported only when a figure is drawn. Figures are
built on matplotlib's Agg canvas directly, not through pyplot, so no global backend or figure state is touched
(safe inside other programs and without a display). Each function returns the `Figure` it saved.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from deeppot.evaluate.dp_test import TestReport

__all__ = ["parity_plot", "plot_lcurve", "plot_parity"]

MAX_SCATTER_POINTS = 200_000  # beyond this a scatter only slows the drawing; the RMSE uses all points
LCURVE_PANELS = (("e", "energy RMSE (eV)"), ("f", "force RMSE (eV/Å)"), ("v", "virial RMSE (eV)"))


def _new_figure(nrows: int, ncols: int, figsize: tuple[float, float], sharex: bool = False) -> tuple[Figure, Any]:
    """A Figure on the Agg canvas and its axes as an (nrows, ncols) array."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:
        raise ImportError("plotting needs matplotlib: pip install deeppot[plot]") from err
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=False, sharex=sharex)


def plot_parity(energy_per_atom_data: np.ndarray, energy_per_atom_pred: np.ndarray, force_data: np.ndarray,
                force_pred: np.ndarray, path: str | os.PathLike, rmse_e: float | None,
                rmse_f: float | None) -> Figure:
    """Two parity panels (prediction against label, with the y = x line) written as a PNG to `path`.

    Energies per atom (n,) eV and force components (m,) eV/Å (any shape, flattened); `rmse_e` (eV/atom) and
    `rmse_f` (eV/Å) are printed in the panel titles (None: not shown).
    """
    fig, axes = _new_figure(1, 2, (10, 4.8))
    _parity_panel(axes[0, 0], energy_per_atom_data, energy_per_atom_pred, "energy", "eV/atom", rmse_e)
    _parity_panel(axes[0, 1], force_data, force_pred, "force", "eV/Å", rmse_f)
    fig.savefig(path, format="png", dpi=150)
    return fig


def parity_plot(report: TestReport, path: str | os.PathLike) -> Figure:
    """`plot_parity` of every tested system of a `run_test` report, titled with its weighted RMSEs."""
    e_data, e_pred, f_data, f_pred = report.parity_arrays()
    return plot_parity(e_data, e_pred, f_data, f_pred, path, report.weighted.get("rmse_e_per_atom"),
                       report.weighted.get("rmse_f"))


def _parity_panel(ax: Axes, data: np.ndarray, pred: np.ndarray, name: str, unit: str,
                  rmse: float | None) -> None:
    data, pred = np.ravel(data), np.ravel(pred)
    if data.size > MAX_SCATTER_POINTS:  # a fixed subsample keeps the plot reproducible
        keep = np.random.default_rng(0).choice(data.size, MAX_SCATTER_POINTS, replace=False)
        data, pred = data[keep], pred[keep]
    ax.scatter(data, pred, s=4, alpha=0.5, linewidths=0, rasterized=True)
    if data.size:
        low = float(min(data.min(), pred.min()))
        high = float(max(data.max(), pred.max()))
        ax.plot([low, high], [low, high], color="black", linewidth=0.8, label="y = x")
        pad = 0.05 * (high - low) or 1.0
        ax.set_xlim(low - pad, high + pad)  # the same range on both axes, so y = x is the diagonal
        ax.set_ylim(low - pad, high + pad)
    ax.ticklabel_format(useOffset=False)  # an offset per axis made the two axes hard to compare
    ax.set_xlabel(f"labelled {name} ({unit})")
    ax.set_ylabel(f"predicted {name} ({unit})")
    ax.set_title(name if rmse is None else f"{name}: RMSE = {rmse:.3e} {unit}")
    ax.set_aspect("equal", adjustable="box")


def plot_lcurve(lcurve_path: str | os.PathLike, out_path: str | os.PathLike) -> Figure:
    """Learning curve from lcurve.out as a PNG: one log-scale panel per quantity, sharing the step axis.

    Panels: energy, force and virial RMSE (training and, when recorded, validation; a quantity whose columns
    are all nan is left out) and the learning rate. Restart header lines are skipped by `read_lcurve`.
    """
    from deeppot.train.lcurve import read_lcurve

    columns = read_lcurve(lcurve_path)
    panels = [(key, label) for key, label in LCURVE_PANELS if _series(columns, key)]
    has_lr = "lr" in columns
    nrows = len(panels) + has_lr
    if nrows == 0:
        raise ValueError(f"{lcurve_path}: no rmse_e/rmse_f/rmse_v or lr column to plot")
    fig, axes = _new_figure(nrows, 1, (7, 2.4 * nrows), sharex=True)
    step = columns["step"]
    for ax, (key, label) in zip(axes[:, 0], panels, strict=False):
        for name, values in _series(columns, key):
            ax.plot(step, _positive(values), label=name.rsplit("_", 1)[1].replace("trn", "train"))
        _log_panel(ax, label)
        ax.legend()
    if has_lr:
        axes[-1, 0].plot(step, _positive(columns["lr"]), color="black")
        _log_panel(axes[-1, 0], "learning rate")
    axes[-1, 0].set_xlabel("step")
    fig.savefig(out_path, format="png", dpi=150)
    return fig


def _series(columns: dict[str, np.ndarray], key: str) -> list[tuple[str, np.ndarray]]:
    """The rmse_<key>_trn / rmse_<key>_val columns that hold at least one number."""
    names = (f"rmse_{key}_trn", f"rmse_{key}_val")
    return [(n, columns[n]) for n in names if n in columns and np.isfinite(columns[n]).any()]


def _positive(values: np.ndarray) -> np.ndarray:
    """Values for a log axis: non-positive entries become nan (a gap) instead of breaking the scale."""
    return np.where(values > 0, values, np.nan)


def _log_panel(ax: Axes, label: str) -> None:
    ax.set_yscale("log")
    ax.set_ylabel(label)
    ax.grid(True, which="major", alpha=0.3)
