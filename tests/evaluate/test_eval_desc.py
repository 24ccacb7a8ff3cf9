"""`deeppot eval-desc` (DeePMD-kit's `dp eval-desc`): one <system name>.npy a system, in file atom order, equal to
`DeepPot.eval_descriptor` on the frames read with NumPy; systems of one name refused before anything is written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from test_dp_test import ATYPE_A, ATYPE_B, write_system

from deeppot.cli.main import main
from deeppot.infer import DeepPot


def test_one_file_a_system_in_file_atom_order(model_file: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    a = write_system(tmp_path / "data" / "sysA", ATYPE_A, 3, seed=1)
    b = write_system(tmp_path / "data" / "more" / "sysB", ATYPE_B, 2, seed=2, nopbc=True,
                     type_names=("H", "O"))  # file type 0 is the model's H: types are mapped by name
    assert main(["eval-desc", "-m", "model.dp", "-s", "data", "-o", "out", "--device", "cpu"]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["sysA.npy", "sysB.npy"]  # nothing else left
    dp = DeepPot(model_file, "cpu")
    want_a = dp.eval_descriptor(a["coord"], a["box"].reshape(3, 9), ATYPE_A)
    want_b = dp.eval_descriptor(b["coord"], None, [1 - t for t in ATYPE_B])
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "sysA.npy"), want_a)
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "sysB.npy"), want_b)
    assert want_b.shape == (2, len(ATYPE_B), 8 * 4)
    assert main(["eval-desc", "-m", "model.dp", "-s", "data/sysA", "-o", "out32", "--dtype", "fp32"]) == 0
    assert np.load(tmp_path / "out32" / "sysA.npy").dtype == np.float32


def test_systems_of_one_name_are_refused(model_file: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    write_system(tmp_path / "x" / "sys", ATYPE_A, 1, seed=1)
    write_system(tmp_path / "y" / "sys", ATYPE_A, 1, seed=2)
    (tmp_path / "list.txt").write_text("x/sys\ny/sys\n")
    assert main(["eval-desc", "-m", "model.dp", "-f", "list.txt", "-o", "out", "--device", "cpu"]) == 1
    assert "systems x/sys and y/sys would both be written to sys.npy" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
