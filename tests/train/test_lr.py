"""The `exp` learning-rate schedule (spec §8); expectations computed from the spec formulas with numpy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from deeppot.config.schema import ConfigError
from deeppot.train.lr import build_lr


def section(**keys) -> dict:
    """A normalised learning_rate section: the defaults of spec §8 plus `keys`."""
    return {"type": "exp", "start_lr": 1e-3, "stop_lr": 5e-8, "stop_lr_ratio": None, "warmup_steps": 0,
            "warmup_ratio": None, "warmup_start_factor": 0.0, "scale_by_worker": "linear", "decay_steps": 5000,
            "decay_rate": None, "smooth": False, **keys}


def test_long_run_keeps_decay_steps():
    lr = build_lr(section(stop_lr=3.51e-8), numb_steps=1_000_000)
    rate = np.exp(np.log(3.51e-8 / 1e-3) / (1_000_000 / 5000))  # 200 decay periods
    assert lr.decay_steps == 5000 and lr.decay_rate == pytest.approx(rate, rel=1e-14)
    assert lr.value(0) == 1e-3 and lr.value(4999) == 1e-3
    assert lr.value(5000) == pytest.approx(1e-3 * rate, rel=1e-14)
    assert lr.value(12_345) == pytest.approx(1e-3 * rate**2, rel=1e-13)
    assert lr.value(999_999) == pytest.approx(1e-3 * rate**199, rel=1e-12)  # last step: one period above stop_lr
    assert lr.value(999_999) > 3.51e-8
    assert lr.value(1_000_000) == pytest.approx(3.51e-8, rel=1e-12)  # stop_lr is reached one past the end


@pytest.mark.parametrize(("numb_steps", "expected_decay_steps"), [(2000, 100), (1010, 100), (1009, 11), (500, 6),
                                                                  (50, 1), (5000, 100)])
def test_decay_steps_reset_when_run_is_short(numb_steps, expected_decay_steps):
    # decay_steps >= numb_steps and no decay_rate -> 100 if T//10 > 100 else T//100 + 1
    lr = build_lr(section(stop_lr=1e-8), numb_steps=numb_steps)
    assert lr.decay_steps == expected_decay_steps
    assert lr.describe()["decay_steps"] == expected_decay_steps


def test_short_run_values():
    lr = build_lr(section(stop_lr=1e-8), numb_steps=500)  # decay_steps 5000 -> 500//100 + 1 = 6
    rate = (1e-8 / 1e-3) ** (6 / 500)
    assert lr.decay_rate == pytest.approx(rate, rel=1e-13)
    for step, periods in [(0, 0), (5, 0), (6, 1), (13, 2), (499, 83)]:
        assert lr.value(step) == pytest.approx(1e-3 * rate**periods, rel=1e-12), step
    assert lr.value(10_000) == 1e-8  # clamped at stop_lr


def test_given_decay_rate_is_used_and_floored_at_stop_lr():
    lr = build_lr(section(decay_rate=0.5, decay_steps=10, stop_lr=1e-5), numb_steps=5)  # no reset: rate given
    assert lr.decay_steps == 10 and lr.decay_rate == 0.5
    assert lr.value(9) == 1e-3 and lr.value(10) == 5e-4 and lr.value(29) == 2.5e-4
    assert lr.value(200) == 1e-5  # 1e-3 · 0.5^20 < stop_lr


def test_stop_lr_ratio():
    lr = build_lr(section(stop_lr=None, stop_lr_ratio=1e-2, decay_steps=100), numb_steps=1000)
    assert lr.stop_lr == pytest.approx(1e-5)
    assert lr.decay_rate == pytest.approx(1e-2 ** (100 / 1000), rel=1e-13)


def test_warmup_then_decay():
    lr = build_lr(section(warmup_steps=100, warmup_start_factor=0.1, decay_steps=1000, stop_lr=1e-6),
                  numb_steps=10_100)
    rate = (1e-6 / 1e-3) ** (1000 / 10_000)  # decay phase T = numb_steps − warmup_steps
    assert lr.value(0) == pytest.approx(1e-4, rel=1e-14)
    assert lr.value(50) == pytest.approx(1e-4 + 0.9e-3 * 0.5, rel=1e-14)
    assert lr.value(100) == 1e-3 and lr.value(1099) == 1e-3
    assert lr.value(1100) == pytest.approx(1e-3 * rate, rel=1e-13)
    assert lr.value(10_099) == pytest.approx(1e-3 * rate**9, rel=1e-12)


def test_warmup_ratio():
    lr = build_lr(section(warmup_ratio=0.25), numb_steps=1000)
    assert lr.warmup_steps == 250
    assert lr.value(0) == 0.0 and lr.value(125) == pytest.approx(5e-4, rel=1e-14)


def test_smooth_decay():
    lr = build_lr(section(smooth=True, decay_steps=100, stop_lr=1e-7), numb_steps=1000)
    rate = (1e-7 / 1e-3) ** (100 / 1000)
    for step in (0, 1, 50, 123, 999):
        assert lr.value(step) == pytest.approx(1e-3 * rate ** (step / 100), rel=1e-12)


def test_zero_steps():
    lr = build_lr(section(), numb_steps=0)
    assert lr.value(0) == 1e-3 and lr.decay_rate == 1.0


@pytest.mark.parametrize("keys", [{}, {"warmup_steps": 37, "warmup_start_factor": 0.2}, {"smooth": True},
                                  {"decay_rate": 0.9, "decay_steps": 7, "stop_lr": 1e-4}])
def test_tensor_equals_value(keys):
    lr = build_lr(section(stop_lr=keys.pop("stop_lr", 1e-8), **keys), numb_steps=3000)
    steps = [0, 1, 2, 36, 37, 38, 99, 100, 101, 1500, 2999, 3000, 10_000]
    expected = np.array([lr.value(s) for s in steps])
    for step_tensor in (torch.tensor(steps), torch.tensor(steps, dtype=torch.float64)):
        got = lr.tensor(step_tensor)
        assert got.dtype == torch.float64 and got.shape == (len(steps),)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=0)
    assert lr.tensor(torch.tensor(100)).item() == pytest.approx(lr.value(100), rel=1e-12)  # 0-d step


def test_errors_name_the_key():
    with pytest.raises(ConfigError, match=r"^learning_rate\.warmup_steps: .*fewer than training\.numb_steps"):
        build_lr(section(warmup_steps=100), numb_steps=100)
    with pytest.raises(ConfigError, match=r"^learning_rate\.type: 'cosine' is not supported"):
        build_lr(section(type="cosine"), numb_steps=100)
    with pytest.raises(ConfigError, match=r"^learning_rate\.stop_lr: .*mutually exclusive"):
        build_lr(section(stop_lr_ratio=0.1), numb_steps=100)


def test_describe():
    info = build_lr(section(stop_lr=1e-8), numb_steps=2000).describe()
    assert info["decay_steps"] == 100 and info["decay_phase_steps"] == 2000
    assert info["decay_rate"] == pytest.approx((1e-8 / 1e-3) ** (100 / 2000), rel=1e-13)
    assert info["last_lr"] == pytest.approx(1e-3 * info["decay_rate"] ** 19, rel=1e-12)


@pytest.mark.parametrize(("keys", "numb_steps"), [
    ({"stop_lr": 3.51e-8}, 1_000_000), ({"stop_lr": 1e-8}, 2000), ({"stop_lr": 1e-8}, 50),
    ({"stop_lr": None, "stop_lr_ratio": 1e-3, "warmup_steps": 100, "warmup_start_factor": 0.1}, 10_000),
    ({"decay_rate": 0.9, "decay_steps": 100, "stop_lr": 1e-5}, 100_000),
    ({"smooth": True, "warmup_ratio": 0.05}, 30_000), ({"stop_lr": 0.0}, 1000),
])
def test_matches_deepmd(keys, numb_steps):
    module = pytest.importorskip("deepmd.dpmodel.utils.learning_rate")
    sec = section(**keys)
    theirs = module.LearningRateExp(**{k: v for k, v in sec.items() if k not in ("type", "scale_by_worker")},
                                    num_steps=numb_steps)
    ours = build_lr(sec, numb_steps)
    assert ours.decay_steps == theirs.decay_steps and ours.warmup_steps == theirs.warmup_steps
    steps = sorted({0, 1, 99, 100, 101, 4999, 5000, 5001, numb_steps // 3, numb_steps - 1, numb_steps})
    np.testing.assert_allclose([ours.value(s) for s in steps], [theirs.value(s) for s in steps], rtol=1e-13)
