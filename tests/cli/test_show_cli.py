"""`deeppot show` against DeePMD-kit's `dp show` (NumPy backend) on the same .dp file, and on a checkpoint."""

from __future__ import annotations

import re

import pytest
import torch
from helpers import make_model

from deeppot.cli.main import main
from deeppot.io import save_model
from deeppot.io.model_file import save_checkpoint

ATTRS = ["type-map", "descriptor", "fitting-net", "observed-type"]


@pytest.fixture(autouse=True)
def info_logs(caplog):
    caplog.set_level("INFO")


def messages(caplog, logger_prefix: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith(logger_prefix)]


def test_same_lines_as_dp_show(tmp_path, caplog):
    deepmd_show = pytest.importorskip("deepmd.entrypoints.show")
    save_model(make_model(), tmp_path / "model.dp")
    assert main(["show", str(tmp_path / "model.dp"), *ATTRS]) == 0
    ours = messages(caplog, "deeppot")
    caplog.clear()
    deepmd_show.show(INPUT=str(tmp_path / "model.dp"), ATTRIBUTES=ATTRS)
    theirs = messages(caplog, "deepmd.entrypoints")
    assert ours == theirs
    assert any(line.startswith("The descriptor parameter is {'type': 'se_e2_a'") for line in ours)


def observed_lines(path, caplog) -> tuple[list[str], list[str]]:
    """`deeppot show PATH observed-type`'s lines and DeePMD-kit's `dp show`'s."""
    deepmd_show = pytest.importorskip("deepmd.entrypoints.show")
    caplog.clear()
    assert main(["show", str(path), "observed-type"]) == 0
    ours = messages(caplog, "deeppot")
    caplog.clear()
    deepmd_show.show(INPUT=str(path), ATTRIBUTES=["observed-type"])
    return ours, messages(caplog, "deepmd.entrypoints")


def test_observed_types_as_dp_show(tmp_path, caplog):
    """Types with a zero output bias were not in the training data; the others sorted by atomic number."""
    model = make_model(ntypes=3, sel=(8, 8, 8))  # type map O, H, C
    with torch.no_grad():
        model.fitting.out_bias[1] = 0.0
    save_model(model, tmp_path / "model.dp")
    ours, theirs = observed_lines(tmp_path / "model.dp", caplog)
    assert ours == theirs and "Observed types: ['C', 'O'] " in ours
    model.config["info"] = {"observed_type": ["H", "O"]}  # what training records: both read it instead
    save_model(model, tmp_path / "model.dp")
    ours, theirs = observed_lines(tmp_path / "model.dp", caplog)
    assert ours == theirs and "Observed types: ['H', 'O'] " in ours


def test_size_counts_trainable_weights(tmp_path, caplog):
    save_model(make_model(), tmp_path / "model.dp")
    assert main(["show", str(tmp_path / "model.dp"), "size"]) == 0
    # helpers.model_config: 2 one-sided embedding nets 1-4-8-16 with resnet_dt (DeePMD puts idt only on layers
    # with a skip: 4->8 and 8->16): (4+4) + (32+8+8) + (128+16+16) = 216 each; 2 fitting nets 64-16-16-1:
    # (1024+16) + (256+16+16) + (16+1) = 1345 each. Buffers (davg, dstd, biases) are not parameters.
    lines = messages(caplog, "deeppot")
    assert lines[-4:] == ["Parameter counts:", "Parameters in descriptor: 432", "Parameters in fitting-net: 2,690",
                          "Parameters in total: 3,122"]


def test_checkpoint(tmp_path, caplog):
    model = make_model()
    save_checkpoint(tmp_path / "model.ckpt-1.pt", {"model": model.state_dict(), "config": {"model": model.config}})
    assert main(["show", str(tmp_path / "model.ckpt-1.pt"), "type-map", "fitting-net"]) == 0
    lines = messages(caplog, "deeppot")
    assert "The type_map is ['O', 'H']" in lines
    assert any(re.match(r"The fitting_net parameter is \{'neuron': \[16, 16\]", line) for line in lines)


def test_errors_are_one_line(tmp_path, capsys):
    assert main(["show", str(tmp_path / "missing.dp"), "type-map"]) == 1
    err = capsys.readouterr().err
    assert "missing.dp" in err and "Traceback" not in err
    save_model(make_model(), tmp_path / "model.dp")
    assert main(["show", str(tmp_path / "model.dp"), "model-branch"]) == 1
    assert "requires a multitask model" in capsys.readouterr().err
    (tmp_path / "junk.dp").write_text("not hdf5")
    assert main(["show", str(tmp_path / "junk.dp"), "size"]) == 1
    err = capsys.readouterr().err
    assert "junk.dp" in err and "Traceback" not in err
