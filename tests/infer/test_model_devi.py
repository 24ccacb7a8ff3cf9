"""`deeppot model-devi` (spec §13) against DeePMD-kit 3.2's own functions on the same predictions.

DeePMD-kit's `deepmd.infer.model_devi` is pure NumPy and imports without its PyTorch backend. Its deviations and
writer are compared with ours on the same arrays, its `calc_model_devi` is run on our `DeepPot`s (it only calls
`.eval`), and its whole `make_model_devi` (system discovery, DeepmdData loading, sets, headers) with its `DeepPot`
replaced by ours, against the `deeppot model-devi` command: byte for byte. The models themselves are compared
with DeePMD-kit's in tests/compat; `benchmarks/model_devi_vs_deepmd.py` runs `dp --pt model-devi` on a GPU machine.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import make_model, model_config

from deeppot.cli.main import main
from deeppot.infer import DeepPot, Evaluator
from deeppot.infer.model_devi import (
    atomic_force_devi,
    energy_devi,
    ensembles_of,
    force_devi,
    make_model_devi,
    model_deviation,
    virial_devi,
    write_model_devi,
)
from deeppot.io import save_model
from deeppot.model import EnergyModel

dmd = pytest.importorskip("deepmd.infer.model_devi")

LABEL_KEYS = ("energy", "force", "virial")


# ---- the pure functions against DeePMD-kit's -------------------------------------------------------------------

def predictions(nm: int = 4, nf: int = 3, natoms: int = 5, seed: int = 0) -> dict[str, np.ndarray]:
    """Random predictions of nm models and labels: energies and virials per atom."""
    rng = np.random.default_rng(seed)
    return {"e": rng.normal(-3, 0.1, (nm, nf)), "f": rng.normal(0, 1, (nm, nf, natoms, 3)),
            "v": rng.normal(0, 0.2, (nm, nf, 9)), "real_e": rng.normal(-3, 0.1, nf),
            "real_f": rng.normal(0, 1, (nf, natoms, 3)), "real_v": rng.normal(0, 0.2, (nf, 9))}


@pytest.mark.parametrize("real", [False, True])
@pytest.mark.parametrize("relative", [None, 0.5])
def test_force_and_energy_devi_equal_deepmd(real: bool, relative: float | None) -> None:
    p = predictions()
    real_f, real_e = (p["real_f"], p["real_e"]) if real else (None, None)
    ref = dmd.calc_model_devi_f(p["f"], real_f, relative=relative, atomic=True)
    np.testing.assert_array_equal(force_devi(p["f"], real_f, relative), ref[:3])
    np.testing.assert_array_equal(atomic_force_devi(p["f"], real_f, relative), ref[3])
    ref_e = dmd.calc_model_devi_e(p["e"][..., None], None if real_e is None else real_e[:, None])
    np.testing.assert_array_equal(energy_devi(p["e"], real_e), ref_e)


@pytest.mark.parametrize("real", [False, True])
def test_virial_devi_equals_deepmd(real: bool) -> None:
    p = predictions()
    real_v = p["real_v"] if real else None
    np.testing.assert_array_equal(virial_devi(p["v"], real_v), dmd.calc_model_devi_v(p["v"], real_v))


@pytest.mark.parametrize("real", [False, True])
def test_relative_virial_devi_is_per_frame(real: bool) -> None:
    """DeePMD-kit divides (nf, 9) by (nf,): right for one frame, an error for 3. Ours equals it frame by frame."""
    p = predictions(nf=3)
    real_v = p["real_v"] if real else None
    ours = virial_devi(p["v"], real_v, relative=0.1)
    for f in range(3):
        one = dmd.calc_model_devi_v(p["v"][:, f:f + 1], None if real_v is None else real_v[f:f + 1], relative=0.1)
        np.testing.assert_array_equal([o[f] for o in ours], [r[0] for r in one])
    with pytest.raises(ValueError, match="broadcast"):
        dmd.calc_model_devi_v(p["v"], real_v, relative=0.1)


@pytest.mark.parametrize("atomic", [False, True])
def test_writer_byte_identical_to_deepmd(tmp_path: Path, atomic: bool) -> None:
    rng = np.random.default_rng(1)
    ncol = 8 + (5 if atomic else 0)
    devi = rng.normal(0, 1, (4, ncol)) * 10.0 ** rng.integers(-12, 12, (4, ncol))
    devi[:, 0] = np.arange(4) * 123456
    devi[1, 1:] = 0.0
    for header in ("", "data/sys.000"):  # appended: two blocks in each file
        write_model_devi(tmp_path / "ours.out", devi, header, atomic)
        dmd.write_model_devi_out(devi, str(tmp_path / "deepmd.out"), header, atomic)
    assert (tmp_path / "ours.out").read_bytes() == (tmp_path / "deepmd.out").read_bytes()


@pytest.mark.parametrize(("ncol", "atomic"), [(7, False), (9, False), (8, True)])
def test_writer_rejects_wrong_columns(tmp_path: Path, ncol: int, atomic: bool) -> None:
    with pytest.raises(ValueError, match="columns"):
        write_model_devi(tmp_path / "x.out", np.zeros((2, ncol)), atomic=atomic)


# ---- models on frames ---------------------------------------------------------------------------------------------

def frames(nf: int = 5, natoms: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Jittered grid frames (no two atoms closer than 1.2 Å) in a 5.4-5.8 Å cell, types O H H O H H."""
    rng = np.random.default_rng(seed)
    grid = np.stack(np.meshgrid(*[np.arange(3)] * 3, indexing="ij"), -1).reshape(-1, 3)[:natoms] * 1.8
    coord = grid[None] + rng.uniform(-0.3, 0.3, (nf, natoms, 3))
    box = np.repeat(np.diag([5.4, 5.6, 5.8])[None], nf, 0) + rng.uniform(0, 0.2, (nf, 3, 3))
    return coord, box, np.array([0, 1, 1, 0, 1, 1][:natoms])


def ensemble(batch_atoms: int | None = None) -> list[DeepPot]:
    """Three models: two of one rcut and sel (they share neighbour data), one of another sel."""
    models = [make_model(0), make_model(1), make_model(2, sel=(20, 28))]
    return [DeepPot(m, device="cpu", batch_atoms=batch_atoms) for m in models]


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("periodic", [True, False])
def test_model_deviation_equals_deepmd_calc_model_devi(monkeypatch, periodic: bool, batched: bool) -> None:
    """DeePMD-kit's calc_model_devi evaluates each model on all frames (`DeepPot.eval`); ours evaluates in
    blocks of 2 frames (batch_atoms 12), the neighbour data of a block once per group of equal rcut and sel.
    Model by model (batched False) the numbers are DeePMD-kit's bit for bit; with the two models of one group
    stacked (batched True, `deeppot.infer.ensemble`) they agree to rounding and only the third model is evaluated
    on its own."""
    coord, box, atype = frames()
    box = box if periodic else None
    pots = ensemble(batch_atoms=12)
    groups = ensembles_of(pots, batched)
    assert [ens.batched for _, ens in groups] == [batched, False]
    ref = dmd.calc_model_devi(coord, box, atype, pots, frequency=5, atomic=True, relative=0.3)
    calls = {"neighbors": 0, "evaluate": 0}

    def counted(name, method):
        def wrapper(self, *args, **kwargs):
            calls[name] += 1
            return method(self, *args, **kwargs)
        return wrapper

    monkeypatch.setattr(Evaluator, "neighbors", counted("neighbors", Evaluator.neighbors))
    monkeypatch.setattr(Evaluator, "evaluate_neighbors", counted("evaluate", Evaluator.evaluate_neighbors))
    ours = model_deviation(pots, coord, box, atype, frequency=5, atomic=True, relative=0.3, ensembles=groups)
    if batched is False:
        np.testing.assert_array_equal(ours, ref)
    else:
        np.testing.assert_allclose(ours, ref, rtol=1e-11, atol=1e-13)
    sequential = 3 if batched is False else 1  # models evaluated one by one, per block
    assert calls == {"neighbors": 3 * 2, "evaluate": 3 * sequential}  # 3 blocks; 2 groups


def test_real_error_equals_deepmd_calc_model_devi() -> None:
    coord, box, atype = frames(nf=1)
    pots = ensemble()
    rng = np.random.default_rng(3)
    labels = {"energy": rng.normal(-10, 1, 1), "force": rng.normal(0, 1, (1, 6, 3)), "virial": rng.normal(0, 1, (1, 9))}
    real = {"energy": labels["energy"][:, None] / 6, "force": labels["force"], "virial": labels["virial"] / 6}
    ref = dmd.calc_model_devi(coord, box, atype, pots, real_data=real, relative=0.2, relative_v=0.4)
    ours = model_deviation(pots, coord, box, atype, labels=labels, relative=0.2, relative_v=0.4)
    np.testing.assert_array_equal(ours, ref)
    with pytest.raises(ValueError, match="missing virial"):
        model_deviation(pots, coord, box, atype, labels={"energy": labels["energy"], "force": labels["force"]})


def test_identical_models_give_zero_deviation() -> None:
    coord, box, atype = frames()
    devi = model_deviation([make_model(0), make_model(0)], coord, box, atype, atomic=True, device="cpu")
    assert devi.shape == (5, 8 + 6)
    np.testing.assert_array_equal(devi[:, 0], np.arange(5))
    # zero up to rounding: the two models' stacked (vmapped) evaluation need not round identically per model
    # (seen here: virial deviations of 5e-21 eV on this CPU's torch 2.13 build)
    np.testing.assert_allclose(devi[:, 1:], 0.0, rtol=0, atol=1e-13)


def scaled(model: EnergyModel, c: float) -> EnergyModel:
    """The model with every energy (hence force and virial) times c: output layer, out_bias, bias_atom_e."""
    model = copy.deepcopy(model)
    with torch.no_grad():
        last = model.fitting.nets.layers[-1]
        for tensor in (last.matrix, last.bias, model.fitting.out_bias, model.fitting.bias_atom_e):
            tensor.mul_(c)
    return model


@pytest.mark.parametrize("relative", [None, 0.7])
def test_scaled_model_gives_known_deviation(relative: float | None) -> None:
    """Models giving y and c y: std_k = |c - 1| / 2 |y| for every quantity, the mean (1 + c) / 2 y."""
    coord, box, atype = frames()
    c, model = 1.2, make_model(0)
    energy, force, virial = DeepPot(model, device="cpu").eval(coord, box, atype)
    devi = model_deviation([model, scaled(model, c)], coord, box, atype, atomic=True, relative=relative,
                           device="cpu")
    half = (c - 1) / 2
    eps_f = half * np.linalg.norm(force, axis=-1)
    if relative is not None:
        eps_f /= (1 + c) / 2 * np.linalg.norm(force, axis=-1) + relative
    eps_v = half * np.abs(virial) / 6
    expected = np.column_stack([eps_v.max(1), eps_v.min(1), np.linalg.norm(eps_v, axis=1) / 3, eps_f.max(1),
                                eps_f.min(1), eps_f.mean(1), half * np.abs(energy[:, 0]) / 6, eps_f])
    np.testing.assert_allclose(devi[:, 1:], expected, rtol=1e-10)


def test_shifted_bias_moves_only_the_energy() -> None:
    """out_bias[O] + delta in one model: energies differ by delta * nO, forces and virials not at all."""
    coord, box, atype = frames()
    model, delta = make_model(0), 0.3
    shifted = copy.deepcopy(model)
    with torch.no_grad():
        shifted.fitting.out_bias[0] += delta
    devi = model_deviation([model, shifted], coord, box, atype, device="cpu")
    np.testing.assert_allclose(devi[:, 1:7], 0.0, rtol=0, atol=1e-13)  # zero up to rounding, as above
    np.testing.assert_allclose(devi[:, 7], delta * 2 / (2 * 6), rtol=1e-10)  # 2 O atoms of 6


def test_mismatched_type_maps_are_refused(tmp_path: Path, capsys) -> None:
    other = EnergyModel.from_config({**model_config(), "type_map": ["H", "O"]})
    coord, box, atype = frames(nf=1)
    with pytest.raises(ValueError, match=r"model 1 has \['H', 'O'\]"):
        model_deviation([make_model(0), other], coord, box, atype, device="cpu")
    save_model(make_model(0), tmp_path / "a.dp")
    save_model(other, tmp_path / "b.dp")
    write_system(tmp_path / "sys", [0, 1, 1], [1], seed=0)
    assert main(["model-devi", "-m", str(tmp_path / "a.dp"), str(tmp_path / "b.dp"), "-s", str(tmp_path / "sys"),
                 "-o", str(tmp_path / "out"), "--device", "cpu"]) == 1
    err = capsys.readouterr().err
    assert "do not share one type map" in err and "b.dp has ['H', 'O']" in err
    assert not (tmp_path / "out").exists()


# ---- the command line against DeePMD-kit's make_model_devi -----------------------------------------------------

def write_system(sys_dir: Path, atype: list[int], set_sizes: list[int], seed: int, type_names=("O", "H"),
                 labels=LABEL_KEYS, nopbc: bool = False) -> None:
    """A DeePMD npy system with one set.NNN per entry of set_sizes (frames), random geometry and labels."""
    rng = np.random.default_rng(seed)
    sys_dir.mkdir(parents=True)
    (sys_dir / "type.raw").write_text(" ".join(map(str, atype)))
    (sys_dir / "type_map.raw").write_text("\n".join(type_names))
    if nopbc:
        (sys_dir / "nopbc").touch()
    for k, nf in enumerate(set_sizes):
        coord, box, _ = frames(nf, len(atype), seed=seed + k)
        arrays = {"coord": coord, "box": box, "energy": rng.normal(-10, 1, nf),
                  "force": rng.normal(0, 1, (nf, len(atype), 3)), "virial": rng.normal(0, 1, (nf, 9))}
        (sys_dir / f"set.{k:03d}").mkdir()
        for key, value in arrays.items():
            if not (key == "box" and nopbc) and (key not in LABEL_KEYS or key in labels):
                np.save(sys_dir / f"set.{k:03d}" / f"{key}.npy", value.reshape(nf, -1))


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """models/m0.dp, m1.dp (sel differs); multi/: A (sets of 3 and 2 frames, type_map.raw H O, so types are
    remapped), B (no periodic boundaries, no virial labels); single/: C (three sets of one frame each)."""
    root = tmp_path_factory.mktemp("model_devi")
    (root / "models").mkdir()
    save_model(make_model(0), root / "models" / "m0.dp")
    save_model(make_model(1, sel=(20, 28)), root / "models" / "m1.dp")
    write_system(root / "multi" / "A", [1, 0, 0, 1, 0, 0], [3, 2], seed=1, type_names=("H", "O"))
    write_system(root / "multi" / "B", [0, 1, 1, 0, 1, 0, 1, 1, 0], [3], seed=2, labels=("energy", "force"),
                 nopbc=True)
    write_system(root / "single" / "C", [0, 1, 1, 0, 1], [1, 1, 1], seed=3)
    return root


def blocks(text: str) -> dict[str, str]:
    """The file cut into its systems' blocks, keyed by the '# <system>' line (DeePMD-kit's system order follows
    the file system's rglob order, ours is sorted)."""
    out: dict[str, str] = {}
    key = ""
    for line in text.splitlines(keepends=True):
        if line.startswith("# ") and not line.startswith("# step"):
            key = line
        out[key] = out.get(key, "") + line
    return out


# DeePMD-kit processes a set at a time and its relative_v needs one-frame sets (see above): those run on single/.
CASES = [
    ("multi", {}), ("multi", {"atomic": True}), ("multi", {"relative": 0.5, "frequency": 10}),
    ("multi", {"real_error": True}), ("multi", {"real_error": True, "relative": 1.0, "atomic": True}),
    ("single", {"relative_v": 0.2}), ("single", {"relative_v": 0.2, "real_error": True, "atomic": True}),
]


@pytest.mark.parametrize(("systems", "options"), CASES)
def test_cli_equals_deepmd_make_model_devi(data: Path, tmp_path: Path, monkeypatch, systems: str,
                                           options: dict) -> None:
    models = [str(data / "models" / f"m{i}.dp") for i in range(2)]
    flags = [f"--{k}" if v is True else f"--{k}={v}" for k, v in options.items() if k != "frequency"]
    flags += ["-f", str(options.get("frequency", 1))]
    assert main(["model-devi", "-m", *models, "-s", str(data / systems), "-o", str(tmp_path / "ours.out"),
                 "--device", "cpu", *flags]) == 0
    monkeypatch.setattr(dmd, "DeepPot", lambda model, **kwargs: DeepPot(model, device="cpu"))
    dmd.make_model_devi(models=models, system=str(data / systems), output=str(tmp_path / "deepmd.out"),
                        **{"frequency": 1, **options})
    ours, ref = ((tmp_path / name).read_text() for name in ("ours.out", "deepmd.out"))
    assert blocks(ours) == blocks(ref)
    assert len(blocks(ours)) == (2 if systems == "multi" else 1)


def test_cli_appends_and_completes_model_names(data: Path, tmp_path: Path, monkeypatch) -> None:
    """Names without a model suffix get .dp (as dp adds its backend's); a second run appends its block."""
    monkeypatch.chdir(data / "models")
    out = tmp_path / "devi.out"
    for _ in range(2):
        assert main(["model-devi", "-m", "m0", "m1", "-s", str(data / "single" / "C"), "-o", str(out),
                     "--device", "cpu", "-S", "set"]) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 2 * (2 + 3) and lines[0] == f"# {data / 'single' / 'C'}" and lines[5] == lines[0]
    expected = make_model_devi([data / "models" / "m0.dp", data / "models" / "m1.dp"], data / "single" / "C",
                               tmp_path / "api.out", device="cpu")
    np.testing.assert_allclose(np.loadtxt(out)[:3], expected[0], rtol=1e-6)  # the file keeps 7 digits
