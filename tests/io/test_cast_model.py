"""cast_model: a model in another precision, and `deeppot md --precision`. The float64 model is the reference:
the float32 cast must give its energies and forces to float32 rounding, and carry everything else over."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ase.io import write
from helpers import make_model, one_thread, random_system  # noqa: F401  (one_thread: autouse)
from md_helpers import water_like

from deeppot.cli.main import main
from deeppot.io import cast_model, save_model
from deeppot.io.compress import compress_model


def _outputs(model, frames):
    coord, atype, box = frames
    out = model(coord, atype, box)
    return out["energy"].detach(), out["force"].detach()


@pytest.mark.parametrize("type_one_side", [True, False])
def test_float32_cast_matches_the_float64_model(type_one_side):
    model = make_model(resnet_dt=False, type_one_side=type_one_side)
    model.min_nbor_dist.fill_(0.9)
    cast = cast_model(model, "float32")
    assert cast.descriptor.dtype == torch.float32 and cast.fitting.dtype == torch.float32
    assert all(p.dtype == torch.float32 for p in cast.parameters())
    assert float(cast.min_nbor_dist) == pytest.approx(0.9)
    assert cast.config["descriptor"]["precision"] == "float32" == cast.config["fitting_net"]["precision"]
    frames = random_system(nframes=2)
    (e64, f64), (e32, f32) = _outputs(model, frames), _outputs(cast, frames)
    torch.testing.assert_close(e32, e64, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(f32, f64, rtol=1e-4, atol=1e-4)
    assert not torch.equal(e32, e64)  # really computed in float32


def test_casting_back_keeps_the_rounded_weights():
    cast = cast_model(make_model(resnet_dt=False), "float32")
    back = cast_model(cast, "float64")
    for name, value in cast.state_dict().items():
        torch.testing.assert_close(back.state_dict()[name].to(value.dtype), value, rtol=0, atol=0, msg=name)


def test_compressed_model_keeps_its_tables():
    model = make_model(resnet_dt=False)
    model.min_nbor_dist.fill_(0.9)  # random_system keeps atoms at least 0.9 Å apart
    frames = random_system(nframes=1)
    compress_model(model)
    cast = cast_model(model, "float32")
    assert cast.descriptor.compressed and cast.descriptor.tables is not None
    torch.testing.assert_close(_outputs(cast, frames)[0], _outputs(model, frames)[0], rtol=1e-5, atol=1e-5)


def test_unknown_precision_is_refused():
    with pytest.raises(ValueError, match="float16"):
        cast_model(make_model(), "float16")


def test_md_precision_runs_the_float32_cast(tmp_path, caplog):
    save_model(make_model(sel=(24, 24), rcut=4.0, resnet_dt=False), tmp_path / "m.dp")
    write(tmp_path / "start.extxyz", water_like())
    runs = {}
    for name, extra in (("f64", []), ("f32", ["--precision", "float32"])):
        with caplog.at_level("INFO"):
            assert main(["md", "-m", str(tmp_path / "m.dp"), "-c", str(tmp_path / "start.extxyz"), "--device", "cpu",
                         "--skin", "0.6", "--steps", "10", "--thermo", "5", "-o", str(tmp_path / name), *extra]) == 0
        runs[name] = np.loadtxt(tmp_path / name / "thermo.out", ndmin=2)
    assert "models run in float32" in caplog.text
    np.testing.assert_allclose(runs["f32"][:, 3], runs["f64"][:, 3], rtol=1e-6)  # potential energies
    assert not np.array_equal(runs["f32"][:, 3], runs["f64"][:, 3])
