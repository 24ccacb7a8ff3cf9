"""`deeppot change-bias` on checkpoints (deeppot's and DeePMD-kit's) and its user errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from compat.deepmd_ref import wrapper_state_dict
from helpers import make_model

from deeppot.cli.main import main
from deeppot.io import load_model, save_model
from deeppot.io.model_file import model_to_file_dict, save_checkpoint


def write_system(path, atype, nframes=3, names=("O", "H"), energy=True):
    """A small periodic system in DeePMD's layout with random (not overlapping) atoms."""
    rng = np.random.default_rng(0)
    (path / "set.000").mkdir(parents=True)
    (path / "type.raw").write_text(" ".join(map(str, atype)))
    (path / "type_map.raw").write_text(" ".join(names))
    grid = np.stack(np.meshgrid(*[np.arange(3)] * 3, indexing="ij"), -1).reshape(-1, 3)[: len(atype)] * 2.0
    coord = grid[None] + rng.uniform(-0.2, 0.2, (nframes, len(atype), 3))
    np.save(path / "set.000" / "coord.npy", coord.reshape(nframes, -1))
    np.save(path / "set.000" / "box.npy", np.tile(np.eye(3).reshape(9) * 6.0, (nframes, 1)))
    if energy:
        np.save(path / "set.000" / "energy.npy", rng.normal(size=nframes) - 50.0)
    return path


def test_deeppot_checkpoint_keeps_the_rest(tmp_path):
    model = make_model()
    state = {"model": model.state_dict(), "config": {"model": model.config}, "optimizer": {"step": 7}}
    save_checkpoint(tmp_path / "model.ckpt-7.pt", state)
    assert main(["change-bias", str(tmp_path / "model.ckpt-7.pt"), "-b", "-93.5", "-187.0"]) == 0
    out = tmp_path / "model.ckpt-7_updated.pt"  # DeePMD-kit's default name
    new = torch.load(out, weights_only=True)
    assert new["optimizer"] == {"step": 7}
    torch.testing.assert_close(new["model"]["fitting.out_bias"], torch.tensor([-93.5, -187.0], dtype=torch.float64))
    for key, value in state["model"].items():
        if key != "fitting.out_bias":
            assert torch.equal(new["model"][key], value), key
    assert load_model(out).fitting.out_bias.tolist() == [-93.5, -187.0]


def test_deepmd_checkpoint(tmp_path):
    model = make_model()
    data = model_to_file_dict(model)
    sd = wrapper_state_dict(data, model.config)
    torch.save({"model": sd}, tmp_path / "dp.pt")
    assert main(["change-bias", str(tmp_path / "dp.pt"), "-b", "1", "2", "-o", str(tmp_path / "out.pt")]) == 0
    new = torch.load(tmp_path / "out.pt", weights_only=True)["model"]
    assert new["model.Default.atomic_model.out_bias"].shape == sd["model.Default.atomic_model.out_bias"].shape
    assert new["model.Default.atomic_model.out_bias"].reshape(-1).tolist() == [1.0, 2.0]
    assert load_model(tmp_path / "out.pt").fitting.out_bias.tolist() == [1.0, 2.0]


def test_set_mode_on_a_checkpoint_fits_the_labels(tmp_path):
    model = make_model()
    save_checkpoint(tmp_path / "c.pt", {"model": model.state_dict(), "config": {"model": model.config}})
    write_system(tmp_path / "a", [0, 1, 1, 1], nframes=2)
    write_system(tmp_path / "b", [0, 0, 1, 0, 1], nframes=2)
    assert main(["change-bias", str(tmp_path / "c.pt"), "-m", "set", "-s", str(tmp_path / "a"), str(tmp_path / "b"),
                 "-o", str(tmp_path / "o.pt")]) == 0
    counts = np.array([[1, 3], [1, 3], [3, 2], [3, 2]], dtype=float)
    energy = np.concatenate([np.load(tmp_path / s / "set.000" / "energy.npy") for s in ("a", "b")])
    expected = np.linalg.lstsq(counts, energy, rcond=None)[0]  # one row per frame (spec §5.3)
    np.testing.assert_allclose(load_model(tmp_path / "o.pt").fitting.out_bias.numpy(), expected, rtol=1e-12)


@pytest.fixture
def model_dp(tmp_path):
    save_model(make_model(), tmp_path / "model.dp")
    return str(tmp_path / "model.dp")


@pytest.mark.parametrize(("args", "message"), [
    (["-b", "1.0"], "one value per type of the model's type_map ['O', 'H'], got 1"),
    (["-s", "nowhere"], "nowhere: system path does not exist"),
    (["-n", "-1", "-s", "sys"], "-n/--numb-batch must be >= 0"),
    (["-s", "cu"], "type 'Cu' not in type_map ['O', 'H']"),
    (["-s", "nolabel"], "no energy.npy"),
    (["-b", "1", "2", "-o", "out.pt"], "keeps the input's format"),
    (["-f", "missing.txt"], "missing.txt: cannot read the list of systems"),
])
def test_user_errors(tmp_path, monkeypatch, capsys, model_dp, args, message):
    monkeypatch.chdir(tmp_path)
    write_system(tmp_path / "sys", [0, 1, 1])
    write_system(tmp_path / "cu", [0, 0], names=("Cu",))
    write_system(tmp_path / "nolabel", [0, 1], energy=False)
    assert main(["change-bias", model_dp, *args]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cu", "model.dp", "nolabel", "sys"]  # nothing written


def test_datafile_lists_systems(tmp_path, model_dp):
    write_system(tmp_path / "sys", [0, 1, 1])
    (tmp_path / "list.txt").write_text(f"{tmp_path / 'sys'}\n\n")
    assert main(["change-bias", model_dp, "-f", str(tmp_path / "list.txt"), "-o", str(tmp_path / "o.dp")]) == 0
    assert load_model(tmp_path / "o.dp").fitting.out_bias.shape == (2,)
