"""DeePMD-kit's own `dp` command reads a deeppot .dp file: `dp --dp test` (NumPy backend) = deeppot's run_test."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("deepmd.dpmodel")

from compat.deepmd_ref import model_section, randomize_model, system_path

from deeppot.evaluate import run_test
from deeppot.io import save_model
from deeppot.model import EnergyModel


def dp_test(name: str, seed: int, tmp_path) -> tuple[EnergyModel, str, str]:
    """A random model saved as model.dp and `dp --dp test` of it on 2 frames of a shared system (detail files
    detail.*): the model, the system and DeePMD-kit's log."""
    system = system_path(name)
    model = randomize_model(EnergyModel.from_config(model_section(name, type_one_side=False)), seed)
    save_model(model, tmp_path / "model.dp")
    cmd = [sys.executable, "-m", "deepmd", "--dp", "test", "-m", "model.dp", "-s", str(system), "-n", "2",
           "-d", "detail"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    return model, str(system), log


def test_dp_test_on_our_model_matches_run_test(tmp_path):
    model, system, log = dp_test("water", 21, tmp_path)
    dp_rmse = float(re.search(r"Energy RMSE\s+:\s+(\S+) eV", log).group(1))
    dp_pred = np.loadtxt(tmp_path / "detail.e.out")[:, 1]  # columns: data_e pred_e

    report = run_test(model, [str(system)], numb_test=2, log=lambda line: None)
    ours_pred = report.results[0].pred["energy"]
    ours_rmse = report.systems[str(system)]["rmse_e"]
    print(f"dp --dp test energy RMSE {dp_rmse:.6e} eV, deeppot run_test {ours_rmse:.6e} eV, "
          f"max rel diff of predicted energies {np.max(np.abs(dp_pred - ours_pred) / np.abs(ours_pred)):.2e}")
    assert dp_pred.shape == ours_pred.shape == (2,)
    np.testing.assert_allclose(dp_pred, ours_pred, rtol=1e-10, atol=0)
    assert dp_rmse == pytest.approx(ours_rmse, rel=1e-6)  # dp prints 7 significant digits


def test_dp_test_stress_lines_and_file_match(tmp_path):
    """A system with virial labels and a cell: DeePMD-kit 3.2.0 reports the stress and writes .s.out; ours has the
    same lines, header and labels' stress (its NumPy backend gives no virial, so its predicted columns are NaN)."""
    model, system, log = dp_test("alloy", 22, tmp_path)
    theirs = [line.split("INFO")[-1].strip() for line in log.splitlines() if "INFO" in line]
    ours: list[str] = []
    run_test(model, [str(system)], numb_test=2, detail_file=str(tmp_path / "ours"), log=ours.append)
    labels = lambda lines: [line.split(":")[0].strip() for line in lines if line.startswith(("Virial", "Stress"))]  # noqa: E731
    assert labels(ours) == labels(theirs) == ["Virial MAE", "Virial RMSE", "Virial MAE/Natoms", "Virial RMSE/Natoms",
                                              "Stress MAE", "Stress RMSE"] * 2
    text = {name: (tmp_path / f"{name}.s.out").read_text(encoding="utf-8") for name in ("ours", "detail")}
    assert text["ours"].splitlines()[0] == text["detail"].splitlines()[0]
    data = {name: np.loadtxt(tmp_path / f"{name}.s.out", encoding="utf-8")[:, :9] for name in text}
    np.testing.assert_allclose(data["ours"], data["detail"], rtol=1e-12)
