"""`deeppot md` end to end on a tiny model saved to a .dp file: the files it writes, a restart that continues the
run exactly, a DeePMD system folder as the structure, model deviation of two models, and its errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ase.io import read, write
from helpers import EXAMPLE_DATA, make_model
from md_helpers import water_like

from deeppot.cli.main import main
from deeppot.infer.model_devi import model_deviation
from deeppot.io import save_model


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("md_cli")
    for seed in (0, 1):
        save_model(make_model(seed=seed, sel=(24, 24), rcut=4.0), root / f"m{seed}.dp")
    write(root / "start.extxyz", water_like())
    return root


def md(files, out, *extra: str) -> int:
    return main(["md", "-m", str(files / "m0.dp"), "-c", str(files / "start.extxyz"), "--device", "cpu",
                 "--skin", "0.6", "-o", str(out), *extra])


def thermo_rows(path) -> np.ndarray:
    return np.loadtxt(path, ndmin=2)


def test_nvt_run_writes_thermo_trajectory_and_restart(files, tmp_path, caplog):
    with caplog.at_level("INFO"):
        assert md(files, tmp_path, "--ensemble", "nvt", "--steps", "20", "--thermo", "5", "--dump", "10") == 0
    header = (tmp_path / "thermo.out").read_text().splitlines()[0]
    assert header.startswith("#") and header.split()[1:] == ["step", "time_fs", "temperature_K", "potential_eV",
                                                               "kinetic_eV", "total_eV", "pressure_bar", "volume_A3"]
    rows = thermo_rows(tmp_path / "thermo.out")
    np.testing.assert_array_equal(rows[:, 0], [0, 5, 10, 15, 20])
    np.testing.assert_allclose(rows[:, 1], rows[:, 0] * 0.5)
    np.testing.assert_allclose(rows[:, 5], rows[:, 3] + rows[:, 4], atol=1e-7)
    assert rows[0, 2] == pytest.approx(300.0)  # Maxwell-Boltzmann at --temp, scaled exactly
    frames = read(tmp_path / "traj.extxyz", ":")
    assert len(frames) == 3 and len(frames[0]) == 24
    assert frames[-1].get_velocities() is not None and frames[-1].get_forces().shape == (24, 3)
    assert (frames[-1].get_scaled_positions(wrap=False) >= -1e-9).all()  # written wrapped
    assert torch.load(tmp_path / "restart.pt", weights_only=False)["step"] == 20
    assert "atom-steps/s" in caplog.text and "ETA" in caplog.text


def test_restart_continues_the_run_exactly(files, tmp_path):
    args = ("--ensemble", "npt", "--thermostat", "langevin", "--press", "1000", "--tau-p", "100", "--thermo", "5",
            "--dump", "10", "--seed", "7")
    assert md(files, tmp_path / "straight", "--steps", "40", *args) == 0
    assert md(files, tmp_path / "split", "--steps", "20", *args) == 0
    assert md(files, tmp_path / "split", "--steps", "20", "--restart", str(tmp_path / "split" / "restart.pt"),
              *args) == 0
    assert (tmp_path / "split" / "thermo.out").read_text() == (tmp_path / "straight" / "thermo.out").read_text()
    a, b = (torch.load(tmp_path / d / "restart.pt", weights_only=False) for d in ("straight", "split"))
    for key in ("positions", "velocities", "cell", "forces"):
        assert torch.equal(a[key], b[key]), key
    assert len(read(tmp_path / "split" / "traj.extxyz", ":")) == 5  # steps 0, 10, 20 (once), 30, 40


def test_deepmd_system_folder_as_structure(files, tmp_path):
    system = EXAMPLE_DATA / "data_0"
    assert main(["md", "-m", str(files / "m0.dp"), "-c", str(system), "--device", "cpu", "--steps", "2",
                 "--thermo", "1", "-o", str(tmp_path)]) == 0
    frame = read(tmp_path / "traj.extxyz", 0)
    assert len(frame) == 192 and set(frame.get_chemical_symbols()) == {"O", "H"}
    assert thermo_rows(tmp_path / "thermo.out").shape == (3, 8)


def test_model_deviation_during_md_equals_model_devi(files, tmp_path):
    models = [str(files / "m0.dp"), str(files / "m1.dp")]
    assert main(["md", "-m", *models, "-c", str(files / "start.extxyz"), "--device", "cpu", "--steps", "20",
                 "--devi-freq", "5", "--dump", "5", "--skin", "0.6", "-o", str(tmp_path)]) == 0
    ours = np.loadtxt(tmp_path / "model_devi.out")
    frames = read(tmp_path / "traj.extxyz", ":")
    atype = np.array([["O", "H"].index(s) for s in frames[0].get_chemical_symbols()])
    theirs = model_deviation(models, np.stack([f.positions for f in frames]), np.stack([f.cell.array for f in frames]),
                             atype, frequency=5, device="cpu")
    np.testing.assert_array_equal(ours[:, 0], [0, 5, 10, 15, 20])
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-7)  # frames are written to 1e-8 Å
    assert (ours[:, 4] > 0).all()  # two different models do deviate


def test_unknown_element_fails_cleanly(files, tmp_path, capsys):
    atoms = water_like()
    atoms.symbols[0] = "Fe"
    write(tmp_path / "bad.extxyz", atoms)
    code = main(["md", "-m", str(files / "m0.dp"), "-c", str(tmp_path / "bad.extxyz"), "--device", "cpu",
                 "--steps", "2", "-o", str(tmp_path / "out")])
    assert code == 1
    assert "Fe not in the model's type map" in capsys.readouterr().err


def test_failed_run_keeps_the_last_good_restart(files, tmp_path, capsys):
    assert md(files, tmp_path, "--steps", "10", "--dump", "5") == 0
    good = (tmp_path / "restart.pt").read_bytes()
    with pytest.raises(SystemExit):
        md(files, tmp_path, "--steps", "10", "--dump", "5", "--restart", str(tmp_path / "restart.pt"),
           "--max-temp", "1")
    assert "exceeds 1 K" in capsys.readouterr().err
    assert (tmp_path / "restart.pt").read_bytes() == good


def test_lammps_data_structure(files, tmp_path):
    write(tmp_path / "start.lmp", water_like(), format="lammps-data", masses=True, specorder=["O", "H"],
          atom_style="atomic")
    assert main(["md", "-m", str(files / "m0.dp"), "-c", str(tmp_path / "start.lmp"), "--format", "lammps-data",
                 "--device", "cpu", "--steps", "2", "--thermo", "1", "-o", str(tmp_path / "out")]) == 0
    assert read(tmp_path / "out" / "traj.extxyz", 0).get_chemical_symbols() == water_like().get_chemical_symbols()


def test_graph_switch(files, tmp_path, capsys):
    """--graph off runs as auto does on a CPU (no graph there); --graph on asks for what a CPU cannot do: a clear
    error, no traceback."""
    assert md(files, tmp_path / "off", "--steps", "3", "--graph", "off") == 0
    assert md(files, tmp_path / "auto", "--steps", "3") == 0
    np.testing.assert_array_equal(thermo_rows(tmp_path / "off" / "thermo.out"),
                                  thermo_rows(tmp_path / "auto" / "thermo.out"))
    assert md(files, tmp_path / "on", "--steps", "3", "--graph", "on") == 1
    assert "CUDA graphs need a CUDA device" in capsys.readouterr().err


def test_tf32_is_refused_where_it_would_change_nothing(files, tmp_path, capsys):
    """--tf32 rounds float32 GEMMs on a GPU: for a float64 model, or on the CPU, a clear error instead of a run
    that silently ignores it. (On a GPU: tests/gpu/test_md_gpu.py.)"""
    assert md(files, tmp_path / "f64", "--steps", "2", "--tf32") == 1
    assert "--tf32 needs float32 models" in capsys.readouterr().err
    assert md(files, tmp_path / "cpu", "--steps", "2", "--tf32", "--precision", "float32") == 1
    assert "--tf32 applies to a GPU's tensor cores" in capsys.readouterr().err
