"""Parity and learning-curve figures: PNG files written, the expected panels drawn."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from deeppot.evaluate import SystemResult, TestReport, parity_plot, plot_lcurve, plot_parity

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# A run with validation, then a restart from step 2000 (header repeated, the saved step re-run);
# rmse_v columns are nan throughout (no virial labels), one force validation value is nan.
LCURVE_RESTART = """\
# step       rmse_val    rmse_trn    rmse_e_val  rmse_e_trn    rmse_f_val  rmse_f_trn    rmse_v_val  rmse_v_trn   lr
# If there is no available reference data, rmse_*_{val,trn} will print nan
      1      3.33e+01    3.41e+01      1.03e+01    1.03e+01      8.39e-01    8.72e-01           nan         nan    1.0e-03
   1000      2.10e+00    2.20e+00      1.00e-01    1.10e-01      2.00e-01    2.10e-01           nan         nan    5.0e-04
   2000      1.10e+00    1.20e+00      5.00e-02    6.00e-02           nan    1.10e-01           nan         nan    2.5e-04
# step       rmse_val    rmse_trn    rmse_e_val  rmse_e_trn    rmse_f_val  rmse_f_trn    rmse_v_val  rmse_v_trn   lr
# If there is no available reference data, rmse_*_{val,trn} will print nan
   2000      1.10e+00    1.20e+00      5.00e-02    6.00e-02      1.00e-01    1.10e-01           nan         nan    2.5e-04
   3000      9.00e-01    9.50e-01      3.00e-02    3.50e-02      8.00e-02    9.00e-02           nan         nan    1.2e-04
"""  # noqa: E501 (verbatim DeePMD lines)

# Training metrics only (no validation data), with virial.
LCURVE_TRAIN_ONLY = """\
# step       rmse_trn    rmse_e_trn    rmse_f_trn    rmse_v_trn   lr
# If there is no available reference data, rmse_*_{val,trn} will print nan
      1      3.41e+01      1.03e+01      8.72e-01      4.00e+00    1.0e-03
    100      2.20e+00      1.10e-01      2.10e-01      1.00e+00    8.0e-04
"""


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert len(data) > 1000 and data[:8] == PNG_MAGIC


def test_plot_parity(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    e = rng.normal(-5, 0.1, 20)
    f = rng.normal(0, 1, 300)
    out = tmp_path / "parity.png"
    fig = plot_parity(e, e + rng.normal(0, 0.01, 20), f, f + rng.normal(0, 0.1, 300), out, 0.0123, 0.0987)
    assert_png(out)
    assert len(fig.axes) == 2
    titles = [ax.get_title() for ax in fig.axes]
    assert "1.230e-02" in titles[0] and "9.870e-02" in titles[1]
    assert len(fig.axes[1].collections[0].get_offsets()) == 300  # every force component drawn


def test_parity_plot_of_report(tmp_path: Path) -> None:
    """Energies per atom and force components of every system with those labels go into the figure."""
    rng = np.random.default_rng(1)

    def result(path: str, natoms: int, nf: int, has_energy: bool) -> SystemResult:
        arrays = {"energy": rng.normal(size=nf), "force": rng.normal(size=(nf, natoms, 3)),
                  "virial": np.zeros((nf, 9))}
        find = {"energy": has_energy, "force": True, "virial": False, "atom_pref": False, "atom_ener": False}
        return SystemResult(path, natoms, True, find, arrays, {k: v + 0.1 for k, v in arrays.items()})

    report = TestReport(weighted={"rmse_e_per_atom": 0.5, "rmse_f": 0.25},
                        results=[result("a", 3, 2, True), result("b", 4, 5, False)])
    fig = parity_plot(report, tmp_path / "p.png")
    assert_png(tmp_path / "p.png")
    energy_points = fig.axes[0].collections[0].get_offsets()
    np.testing.assert_allclose(energy_points[:, 0], report.results[0].data["energy"] / 3)
    assert len(fig.axes[1].collections[0].get_offsets()) == 2 * 3 * 3 + 5 * 4 * 3


def test_plot_lcurve_restart_and_nan(tmp_path: Path) -> None:
    lcurve = tmp_path / "lcurve.out"
    lcurve.write_text(LCURVE_RESTART)
    out = tmp_path / "lcurve.png"
    fig = plot_lcurve(lcurve, out)
    assert_png(out)
    assert len(fig.axes) == 3  # energy, force, lr: the all-nan virial panel is left out
    energy_ax = fig.axes[0]
    assert [line.get_label() for line in energy_ax.get_lines()] == ["train", "val"]
    np.testing.assert_allclose(energy_ax.get_lines()[0].get_xdata(), [1, 1000, 2000, 2000, 3000])
    assert all(ax.get_yscale() == "log" for ax in fig.axes)
    assert fig.axes[-1].get_xlabel() == "step"


def test_plot_lcurve_train_only_with_virial(tmp_path: Path) -> None:
    lcurve = tmp_path / "lcurve.out"
    lcurve.write_text(LCURVE_TRAIN_ONLY)
    fig = plot_lcurve(lcurve, tmp_path / "lc.png")
    assert_png(tmp_path / "lc.png")
    assert len(fig.axes) == 4  # energy, force, virial, lr
    assert [len(ax.get_lines()) for ax in fig.axes] == [1, 1, 1, 1]


def test_missing_matplotlib_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)  # makes the import fail
    with pytest.raises(ImportError, match=r"pip install deeppot\[plot\]"):
        plot_parity(np.zeros(2), np.zeros(2), np.zeros(6), np.zeros(6), tmp_path / "x.png", None, None)
