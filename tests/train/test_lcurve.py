"""lcurve.out and log lines in DeePMD-kit's exact format (spec §9.3, §9.4)."""

from __future__ import annotations

import datetime
import math

import numpy as np
import pytest

from deeppot.train.lcurve import LcurveWriter, eta_seconds, format_eta, format_log_line, read_lcurve

# the literal example of spec §9.3 (energy + force loss, with validation); note the trailing spaces after "lr"
SPEC_HEADER = "# step       rmse_val    rmse_trn    rmse_e_val  rmse_e_trn    rmse_f_val  rmse_f_trn   lr      \n"
SPEC_NOTE = "# If there is no available reference data, rmse_*_{val,trn} will print nan\n"
SPEC_LINE = "      1      3.33e+01    3.41e+01      1.03e+01    1.03e+01      8.39e-01    8.72e-01    1.0e-03\n"


def test_header_and_line_equal_spec_example(tmp_path):
    path = tmp_path / "lcurve.out"
    with LcurveWriter(path, ["rmse_f", "rmse", "rmse_e"], has_validation=True) as writer:
        writer.write(1, trn={"rmse": 34.1, "rmse_e": 10.3, "rmse_f": 0.872}, lr=1e-3,
                     val={"rmse": 33.3, "rmse_e": 10.3, "rmse_f": 0.839})
    assert path.read_text() == SPEC_HEADER + SPEC_NOTE + SPEC_LINE


def test_efv_column_order_without_validation(tmp_path):
    path = tmp_path / "lcurve.out"
    with LcurveWriter(path, ["rmse_v", "rmse_f", "rmse_e", "rmse"], has_validation=False) as writer:
        writer.write(100, trn={"rmse": 1.0, "rmse_e": 2e-3, "rmse_f": 0.5, "rmse_v": 4e-3}, lr=9.5e-4)
    header, note, line = path.read_text().splitlines(keepends=True)
    # "# " + "step".ljust(5), then "   " + right-aligned width-11 names, then "   " + "lr".ljust(8)
    assert header == ("# step " + "      rmse_trn" + "    rmse_e_trn" + "    rmse_f_trn" + "    rmse_v_trn"
                      + "   lr      \n")
    assert note == SPEC_NOTE
    assert line == ("    100" + "      1.00e+00" + "      2.00e-03" + "      5.00e-01" + "      4.00e-03"
                    + "    9.5e-04\n")


def test_missing_metric_prints_nan(tmp_path):
    path = tmp_path / "lcurve.out"
    with LcurveWriter(path, ["rmse", "rmse_v"], has_validation=True) as writer:
        writer.write(7, trn={"rmse": 1.0, "rmse_v": math.nan}, lr=1e-3, val={"rmse": 2.0})
    assert path.read_text().splitlines()[2] == "      7      2.00e+00    1.00e+00           nan         nan    1.0e-03"


def test_line_buffered(tmp_path):
    path = tmp_path / "lcurve.out"
    writer = LcurveWriter(path, ["rmse"], has_validation=False)
    writer.write(1, trn={"rmse": 1.0}, lr=1e-3)
    assert len(path.read_text().splitlines()) == 3  # visible before close
    writer.close()


def test_restart_appends_and_repeats_header(tmp_path):
    path = tmp_path / "lcurve.out"
    with LcurveWriter(path, ["rmse", "rmse_e"], has_validation=False) as writer:
        for step in (1, 10, 20):
            writer.write(step, trn={"rmse": step * 1.0, "rmse_e": step * 0.1}, lr=1e-3)
    with LcurveWriter(path, ["rmse", "rmse_e"], has_validation=False, append=True) as writer:
        for step in (20, 30):  # the saved step is re-run after a restart
            writer.write(step, trn={"rmse": step * 1.0, "rmse_e": step * 0.1}, lr=5e-4)
    lines = path.read_text().splitlines()
    assert len(lines) == 2 + 3 + 2 + 2 and lines[5].startswith("# step") and lines[6] == SPEC_NOTE.rstrip("\n")
    columns = read_lcurve(path)
    assert list(columns) == ["step", "rmse_trn", "rmse_e_trn", "lr"]
    np.testing.assert_array_equal(columns["step"], [1, 10, 20, 20, 30])
    np.testing.assert_allclose(columns["rmse_e_trn"], [0.1, 1.0, 2.0, 2.0, 3.0])
    np.testing.assert_allclose(columns["lr"], [1e-3, 1e-3, 1e-3, 5e-4, 5e-4])


def test_new_run_overwrites(tmp_path):
    path = tmp_path / "lcurve.out"
    path.write_text("old\n")
    with LcurveWriter(path, ["rmse"], has_validation=False) as writer:
        writer.write(1, trn={"rmse": 1.0}, lr=1e-3)
    assert "old" not in path.read_text()


def test_read_lcurve_with_validation(tmp_path):
    path = tmp_path / "lcurve.out"
    path.write_text(SPEC_HEADER + SPEC_NOTE + SPEC_LINE)
    columns = read_lcurve(path)
    assert list(columns) == ["step", "rmse_val", "rmse_trn", "rmse_e_val", "rmse_e_trn", "rmse_f_val",
                             "rmse_f_trn", "lr"]
    assert columns["rmse_f_val"][0] == 0.839 and columns["lr"][0] == 1e-3


def test_read_lcurve_rejects_ragged_rows(tmp_path):
    path = tmp_path / "lcurve.out"
    path.write_text(SPEC_HEADER + SPEC_NOTE + "      1   1.0e+00\n")
    with pytest.raises(ValueError, match="columns"):
        read_lcurve(path)


def test_log_lines():
    metrics = {"rmse_f": 0.872, "rmse": 34.1, "rmse_e": 10.3}
    assert format_log_line(1, "trn", metrics, lr=1e-3) == (
        "Batch       1: trn: rmse = 3.41e+01, rmse_e = 1.03e+01, rmse_f = 8.72e-01, lr = 1.00e-03")
    assert format_log_line(2000, "val", metrics) == (
        "Batch    2000: val: rmse = 3.41e+01, rmse_e = 1.03e+01, rmse_f = 8.72e-01")


def test_log_line_nan_total_aborts():
    with pytest.raises(RuntimeError, match="NaN detected at batch      10: trn"):
        format_log_line(10, "trn", {"rmse": math.nan, "rmse_e": 1.0}, lr=1e-3)
    assert format_log_line(10, "trn", {"rmse": math.nan}, check_nan=False).endswith("rmse =      nan")
    assert "rmse_v =      nan" in format_log_line(10, "val", {"rmse": 1.0, "rmse_v": math.nan})


def test_eta_line():
    now = datetime.datetime(2026, 1, 1, 11, 0, 0)
    assert format_eta(100, 12.3449) == "Batch     100: total wall time = 12.34 s"
    assert format_eta(200, 12.34, eta=3723, now=now) == (
        "Batch     200: total wall time = 12.34 s, eta = 1:02:03 at 2026-01-01 12:02")
    assert format_eta(300, 1.0, eta=90_000, now=now).endswith("eta = 1 day, 1:00:00 at 2026-01-02 12:00")


def test_eta_seconds_from_last_interval():
    # 900 steps left at 12 s per 100 steps
    assert eta_seconds(numb_steps=1000, step=100, interval_time=12.0, interval_steps=100) == 108
