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


def test_dp_test_on_our_model_matches_run_test(tmp_path):
    system = system_path("water")
    model = randomize_model(EnergyModel.from_config(model_section("water", type_one_side=False)), 21)
    save_model(model, tmp_path / "model.dp")
    cmd = [sys.executable, "-m", "deepmd", "--dp", "test", "-m", "model.dp", "-s", str(system), "-n", "2",
           "-d", "detail"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
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
