"""`run_test` (dp test, spec §11.1) against errors computed here with numpy from the model's own predictions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from deeppot.data import DataError
from deeppot.evaluate import run_test
from deeppot.model import EnergyModel

CONFIG = {
    "type_map": ["O", "H"],
    "descriptor": {"type": "se_e2_a", "sel": [24, 24], "rcut": 4.0, "rcut_smth": 1.0, "neuron": [4, 8],
                   "axis_neuron": 4, "seed": 1},
    "fitting_net": {"neuron": [8, 8], "seed": 2},
}
# Types deliberately not sorted, so that sorting atoms by type would change the atom order.
ATYPE_A = [1, 0, 1, 1, 0, 1]
ATYPE_B = [0, 1, 1, 0, 1, 0, 1, 1, 0]


@pytest.fixture(scope="module")
def model() -> EnergyModel:
    torch.manual_seed(0)
    model = EnergyModel.from_config(CONFIG)
    with torch.no_grad():  # non-trivial bias so that energies are not near zero
        model.fitting.out_bias.copy_(torch.tensor([-2.0, -0.5], dtype=torch.float64))
    return model


def write_system(sys_dir: Path, atype: list[int], nframes: int, seed: int, labels=("energy", "force", "virial"),
                 nopbc: bool = False, type_names=("O", "H")) -> dict[str, np.ndarray]:
    """A DeePMD system with random geometry and labels; returns the arrays in file atom order."""
    rng = np.random.default_rng(seed)
    natoms = len(atype)
    sys_dir.mkdir(parents=True)
    (sys_dir / "type.raw").write_text(" ".join(map(str, atype)))
    (sys_dir / "type_map.raw").write_text("\n".join(type_names))
    if nopbc:
        (sys_dir / "nopbc").touch()
    grid = np.stack(np.meshgrid(*[np.arange(3)] * 3, indexing="ij"), -1).reshape(-1, 3)[:natoms] * 1.8
    arrays = {
        "coord": grid[None] + rng.uniform(-0.3, 0.3, (nframes, natoms, 3)),  # no two atoms closer than 1.2 Å
        "box": np.repeat(np.diag([5.4, 5.6, 5.8])[None], nframes, 0) + rng.uniform(0, 0.2, (nframes, 3, 3)),
        "energy": rng.normal(-10, 1, nframes),
        "force": rng.normal(0, 1, (nframes, natoms, 3)),
        "virial": rng.normal(0, 1, (nframes, 9)),
        "atom_pref": rng.uniform(0.5, 2.0, (nframes, natoms)),
        "atom_ener": rng.normal(-1, 0.3, (nframes, natoms)),
    }
    (sys_dir / "set.000").mkdir()
    for key in ("coord", "box", *labels):
        if key == "box" and nopbc:
            continue
        np.save(sys_dir / "set.000" / f"{key}.npy", arrays[key].reshape(nframes, -1))
    return arrays


def predict(model: EnergyModel, arrays: dict[str, np.ndarray], atype: list[int], nopbc: bool = False) -> dict:
    """The model called directly on all frames at once (file order, type_map.raw equal to the model's)."""
    box = None if nopbc else torch.tensor(arrays["box"])
    out = model(torch.tensor(arrays["coord"]), torch.tensor(atype), box)
    return {k: v.detach().numpy() for k, v in out.items()}


def errors(pred: np.ndarray, ref: np.ndarray, scale: float = 1.0) -> tuple[float, float]:
    diff = (pred - ref).ravel()
    return np.abs(diff).mean() * scale, np.sqrt((diff**2).mean()) * scale


@pytest.fixture
def two_systems(tmp_path: Path, model: EnergyModel) -> dict:
    """System A: 6 atoms, 5 frames, with virial; system B: 9 atoms, 3 frames, no virial labels."""
    a = write_system(tmp_path / "sysA", ATYPE_A, 5, seed=1)
    b = write_system(tmp_path / "sysB", ATYPE_B, 3, seed=2, labels=("energy", "force"))
    return {"paths": [str(tmp_path / "sysA"), str(tmp_path / "sysB")], "arrays": [a, b],
            "pred": [predict(model, a, ATYPE_A), predict(model, b, ATYPE_B)], "atype": [ATYPE_A, ATYPE_B]}


def test_metrics_equal_numpy(model: EnergyModel, two_systems: dict) -> None:
    lines: list[str] = []
    report = run_test(model, two_systems["paths"], batch_frames=2, log=lines.append)  # chunks of 2 frames
    for path, arrays, pred, atype in zip(two_systems["paths"], two_systems["arrays"], two_systems["pred"],
                                         two_systems["atype"], strict=True):
        got = report.systems[path]
        natoms = len(atype)
        np.testing.assert_allclose([got["mae_e"], got["rmse_e"]], errors(pred["energy"], arrays["energy"]))
        np.testing.assert_allclose([got["mae_e_per_atom"], got["rmse_e_per_atom"]],
                                   errors(pred["energy"], arrays["energy"], 1 / natoms))
        np.testing.assert_allclose([got["mae_f"], got["rmse_f"]], errors(pred["force"], arrays["force"]))
    a, b = (report.systems[p] for p in two_systems["paths"])
    pa = two_systems["pred"][0]
    np.testing.assert_allclose([a["mae_v"], a["rmse_v"]], errors(pa["virial"], two_systems["arrays"][0]["virial"]))
    np.testing.assert_allclose([a["mae_v_per_atom"], a["rmse_v_per_atom"]],
                               errors(pa["virial"], two_systems["arrays"][0]["virial"], 1 / 6))
    volume = np.abs(np.linalg.det(two_systems["arrays"][0]["box"]))[:, None]  # stress = -virial / volume
    np.testing.assert_allclose([a["mae_s"], a["rmse_s"]],
                               errors(-pa["virial"] / volume, -two_systems["arrays"][0]["virial"] / volume))
    assert "mae_v" not in b and "mae_s" not in b and "mae_fw" not in a
    # Weights: energy = frames (5, 3), force = 3 * natoms * frames (90, 81), virial only in A.
    w = {"e": np.array([5, 3]), "e_per_atom": np.array([5, 3]), "f": np.array([90, 81])}
    for name, weight in w.items():
        maes = np.array([a[f"mae_{name}"], b[f"mae_{name}"]])
        rmses = np.array([a[f"rmse_{name}"], b[f"rmse_{name}"]])
        assert report.weighted[f"mae_{name}"] == pytest.approx((maes * weight).sum() / weight.sum(), rel=1e-12)
        assert report.weighted[f"rmse_{name}"] == pytest.approx(
            np.sqrt((rmses**2 * weight).sum() / weight.sum()), rel=1e-12)
    assert report.weighted["rmse_v"] == pytest.approx(a["rmse_v"], rel=1e-12)
    assert lines == report.lines


def test_report_lines(model: EnergyModel, two_systems: dict) -> None:
    lines: list[str] = []
    report = run_test(model, two_systems["paths"], log=lines.append)
    path_a, path_b = two_systems["paths"]
    a = report.systems[path_a]
    block_a = [
        "# ---------------output of dp test---------------",
        f"# testing system : {path_a}",
        "# number of test data : 5",
        f"Energy MAE         : {a['mae_e']:e} eV",
        f"Energy RMSE        : {a['rmse_e']:e} eV",
        f"Energy MAE/Natoms  : {a['mae_e_per_atom']:e} eV",
        f"Energy RMSE/Natoms : {a['rmse_e_per_atom']:e} eV",
        f"Force  MAE         : {a['mae_f']:e} eV/Å",
        f"Force  RMSE        : {a['rmse_f']:e} eV/Å",
        f"Virial MAE         : {a['mae_v']:e} eV",
        f"Virial RMSE        : {a['rmse_v']:e} eV",
        f"Virial MAE/Natoms  : {a['mae_v_per_atom']:e} eV",
        f"Virial RMSE/Natoms : {a['rmse_v_per_atom']:e} eV",
        f"Stress MAE         : {a['mae_s']:e} eV/Å³",
        f"Stress RMSE        : {a['rmse_s']:e} eV/Å³",
        "# -----------------------------------------------",
    ]
    assert lines[: len(block_a)] == block_a
    block_b = lines[len(block_a): lines.index("# ----------weighted average of errors-----------")]
    assert block_b[1:3] == [f"# testing system : {path_b}", "# number of test data : 3"]
    assert not any(line.startswith(("Virial", "Stress")) for line in block_b)  # B has no virial labels
    tail = lines[len(block_a) + len(block_b):]
    assert tail[:2] == ["# ----------weighted average of errors-----------", "# number of systems : 2"]
    assert tail[2] == f"Energy MAE         : {report.weighted['mae_e']:e} eV"
    assert tail[-1] == "# -----------------------------------------------"
    assert sum(line.startswith("Virial") for line in tail) == 4
    assert sum(line.startswith("Stress") for line in tail) == 2


def test_detail_files(model: EnergyModel, two_systems: dict, tmp_path: Path) -> None:
    prefix = tmp_path / "out" / "detail"
    prefix.parent.mkdir()
    run_test(model, two_systems["paths"], detail_file=str(prefix), batch_frames=4, log=lambda _: None)
    (a, b), (pa, pb) = two_systems["arrays"], two_systems["pred"]
    natoms = np.array([6] * 5 + [9] * 3)
    energy = np.stack([np.concatenate([a["energy"], b["energy"]]), np.concatenate([pa["energy"], pb["energy"]])], 1)
    np.testing.assert_allclose(np.loadtxt(f"{prefix}.e.out"), energy, rtol=1e-12)
    np.testing.assert_allclose(np.loadtxt(f"{prefix}.e_peratom.out"), energy / natoms[:, None], rtol=1e-12)
    force = np.concatenate([np.concatenate([a["force"].reshape(-1, 3), pa["force"].reshape(-1, 3)], 1),
                            np.concatenate([b["force"].reshape(-1, 3), pb["force"].reshape(-1, 3)], 1)])
    np.testing.assert_allclose(np.loadtxt(f"{prefix}.f.out"), force, rtol=1e-12)  # file atom order
    virial = np.loadtxt(f"{prefix}.v.out")
    assert virial.shape == (8, 18)
    np.testing.assert_allclose(virial[:5], np.concatenate([a["virial"], pa["virial"]], 1), rtol=1e-12)
    np.testing.assert_array_equal(virial[5:, :9], 0.0)  # no virial labels in B: zeros
    np.testing.assert_allclose(virial[5:, 9:], pb["virial"], rtol=1e-12)
    np.testing.assert_allclose(np.loadtxt(f"{prefix}.v_peratom.out"), virial / natoms[:, None], rtol=1e-12)
    headers = [line for line in Path(f"{prefix}.e.out").read_text().splitlines() if line.startswith("#")]
    assert headers == [f"# {two_systems['paths'][0]}: data_e pred_e"]  # once, from the first system
    stress = np.loadtxt(f"{prefix}.s.out", encoding="utf-8")  # system A only: B has no virial labels
    volume = np.abs(np.linalg.det(a["box"]))[:, None]
    np.testing.assert_allclose(stress, -np.concatenate([a["virial"], pa["virial"]], 1) / volume, rtol=1e-12)
    assert Path(f"{prefix}.s.out").read_text(encoding="utf-8").startswith(
        f"# {two_systems['paths'][0]} (eV/Å³): data_sxx data_sxy data_sxz data_syx")
    f_text = Path(f"{prefix}.f.out").read_text()
    assert f_text.startswith(f"# {two_systems['paths'][0]}: data_fx data_fy data_fz pred_fx pred_fy pred_fz\n")
    assert f_text.count("#") == 1


def test_detail_files_overwritten_by_new_run(model: EnergyModel, two_systems: dict, tmp_path: Path) -> None:
    prefix = str(tmp_path / "detail")
    for _ in range(2):
        run_test(model, two_systems["paths"][:1], detail_file=prefix, log=lambda _: None)
    assert np.loadtxt(f"{prefix}.e.out").shape == (5, 2)
    assert Path(f"{prefix}.v.out").read_text().count("#") == 1


def test_numb_test_and_shuffle(model: EnergyModel, two_systems: dict, tmp_path: Path) -> None:
    path_a = two_systems["paths"][0]
    a, pa = two_systems["arrays"][0], two_systems["pred"][0]
    lines: list[str] = []
    report = run_test(model, [path_a], numb_test=2, log=lines.append)
    assert "# number of test data : 2" in lines
    assert report.systems[path_a]["rmse_f"] == pytest.approx(errors(pa["force"][:2], a["force"][:2])[1], rel=1e-12)
    prefix = str(tmp_path / "shuffled")
    run_test(model, [path_a], numb_test=3, shuffle_test=True, rand_seed=7, detail_file=prefix, log=lambda _: None)
    perm = np.arange(5)
    np.random.RandomState(7).shuffle(perm)  # DeePMD-kit: one global stream seeded with rand_seed
    expected = np.stack([a["energy"][perm[:3]], pa["energy"][perm[:3]]], 1)
    np.testing.assert_allclose(np.loadtxt(f"{prefix}.e.out"), expected, rtol=1e-12)


def test_atom_pref_atomic_and_nopbc(model: EnergyModel, tmp_path: Path) -> None:
    labels = ("energy", "force", "virial", "atom_pref", "atom_ener")
    arrays = write_system(tmp_path / "mol", ATYPE_A, 4, seed=3, labels=labels, nopbc=True)
    pred = predict(model, arrays, ATYPE_A, nopbc=True)
    lines: list[str] = []
    got = run_test(model, [str(tmp_path / "mol")], atomic=True, log=lines.append).systems[str(tmp_path / "mol")]
    weight = np.repeat(arrays["atom_pref"][..., None], 3, axis=-1)
    diff = pred["force"] - arrays["force"]
    assert got["mae_fw"] == pytest.approx((np.abs(diff) * weight).sum() / weight.sum(), rel=1e-12)
    assert got["rmse_fw"] == pytest.approx(np.sqrt((diff**2 * weight).sum() / weight.sum()), rel=1e-12)
    assert f"Force weighted RMSE: {got['rmse_fw']:e} eV/Å" in lines
    np.testing.assert_allclose([got["mae_ae"], got["rmse_ae"]], errors(pred["atom_energy"], arrays["atom_ener"]))
    assert f"Atomic ener RMSE   : {got['rmse_ae']:e} eV" in lines
    assert not any(line.startswith("Virial") for line in lines)  # virial labels of a non-periodic system
    assert sum(line.startswith("Atomic ener") for line in lines) == 2  # per system only, not averaged


def test_atomic_needs_atom_ener(model: EnergyModel, two_systems: dict) -> None:
    with pytest.raises(DataError, match="atom_ener"):
        run_test(model, two_systems["paths"][:1], atomic=True, log=lambda _: None)


def test_type_map_remapped_by_name(model: EnergyModel, tmp_path: Path) -> None:
    """type_map.raw ["H", "O"]: file type 0 is the model's type 1; the result must equal the remapped call."""
    arrays = write_system(tmp_path / "swapped", ATYPE_A, 2, seed=4, type_names=("H", "O"))
    pred = predict(model, arrays, [1 - t for t in ATYPE_A])
    got = run_test(model, [str(tmp_path / "swapped")], log=lambda _: None).systems[str(tmp_path / "swapped")]
    assert got["rmse_e"] == pytest.approx(errors(pred["energy"], arrays["energy"])[1], rel=1e-12)
