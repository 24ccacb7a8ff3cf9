"""`deeppot neighbor-stat` end to end, against DeePMD-kit's own `dp neighbor-stat` entry point on the same files."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from deeppot.cli.main import main

pytestmark = pytest.mark.usefixtures("info_logs")

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.fixture
def info_logs(caplog):
    caplog.set_level("INFO", logger="deeppot")


def small_copy(src: Path, dst: Path, nframes: int) -> Path:
    """The first frames of a shared system, written in DeePMD's layout (coordinates wrapped into the cell, since
    DeePMD-kit's statistics do not wrap them)."""
    if not src.is_dir():
        pytest.skip(f"{src} not available")
    (dst / "set.000").mkdir(parents=True)
    for name in ("type.raw", "type_map.raw"):
        shutil.copy(src / name, dst / name)
    coord = np.load(src / "set.000" / "coord.npy")[:nframes].astype(np.float64).reshape(nframes, -1, 3)
    box = np.load(src / "set.000" / "box.npy")[:nframes].astype(np.float64).reshape(nframes, 3, 3)
    frac = np.linalg.solve(box.transpose(0, 2, 1), coord.transpose(0, 2, 1)).transpose(0, 2, 1) % 1.0
    np.save(dst / "set.000" / "coord.npy", (frac @ box).reshape(nframes, -1))
    np.save(dst / "set.000" / "box.npy", box.reshape(nframes, 9))
    return dst


def logged(out: str, key: str) -> str:
    match = re.search(rf"{key}: (.*)$", out, re.MULTILINE)
    assert match, out
    return match.group(1)


@pytest.mark.parametrize(("name", "type_map"), [("water/data_3", ["O", "H"]), ("alloy/valid/sys.000", None)])
def test_same_numbers_as_dp_neighbor_stat(tmp_path, caplog, name, type_map):
    deepmd_ns = pytest.importorskip("deepmd.entrypoints.neighbor_stat")
    data = small_copy(SHARED / name, tmp_path / "data" / "sys", 4)
    args = ["neighbor-stat", "-s", str(tmp_path / "data"), "-r", "6.0", "--device", "cpu"]
    assert main(args + (["-t", *type_map] if type_map else [])) == 0
    out = caplog.text
    caplog.clear()
    want_dist, want_count = deepmd_ns.neighbor_stat(system=str(data), rcut=6.0, type_map=type_map, backend="dp")
    assert float(logged(out, "min_nbor_dist")) == pytest.approx(want_dist, abs=1e-6)  # printed with %f
    assert logged(out, "max_nbor_size") == str(want_count)
    want_sel = [4 * -(-int(c * 1.1) // 4) for c in want_count]
    assert re.search(rf"suggested sel .*: {re.escape(str(want_sel))}$", out, re.MULTILINE), out


def test_one_type_counts_all_neighbours(tmp_path, caplog):
    small_copy(SHARED / "water/data_3", tmp_path / "sys", 2)
    assert main(["neighbor-stat", "-s", str(tmp_path / "sys"), "-r", "6.0", "--device", "cpu"]) == 0
    per_type = [int(c) for c in logged(caplog.text, "max_nbor_size").strip("[]").split()]
    caplog.clear()
    assert main(["neighbor-stat", "-s", str(tmp_path / "sys"), "-r", "6.0", "--one-type", "--device", "cpu"]) == 0
    (total,) = [int(c) for c in logged(caplog.text, "max_nbor_size").strip("[]").split()]
    assert max(per_type) <= total <= sum(per_type)


@pytest.mark.parametrize(("make", "message"), [
    (lambda d: None, "system path does not exist"),
    (lambda d: (d.mkdir(), (d / "x").write_text("")), "no DeePMD system"),
])
def test_bad_systems_one_clear_line(tmp_path, capsys, make, message):
    make(tmp_path / "sys")
    assert main(["neighbor-stat", "-s", str(tmp_path / "sys"), "-r", "6"]) == 1
    err = capsys.readouterr().err
    assert message in err and str(tmp_path / "sys") in err and "Traceback" not in err


def test_type_map_mismatch_names_file(tmp_path, capsys):
    small_copy(SHARED / "water/data_3", tmp_path / "sys", 1)
    assert main(["neighbor-stat", "-s", str(tmp_path / "sys"), "-r", "6", "-t", "Cu"]) == 1
    err = capsys.readouterr().err
    assert "type_map.raw" in err and "'O'" in err and "Traceback" not in err
