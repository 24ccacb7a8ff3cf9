"""deeppot.data.batching: batch sizes (§1.4), system probabilities (§1.5), frame batches (§1.3)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from deeppot.data import FrameSampler, nbatches, resolve_batch_sizes, system_probs

NATOMS = [192, 10, 3]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("auto", [1, 4, 11]),  # ceil(32/192), ceil(32/10), ceil(32/3)
        ("auto:32", [1, 4, 11]),
        ("auto:100", [1, 10, 34]),
        ("max:32", [1, 3, 10]),  # max(1, 32 // natoms)
        ("max:200", [1, 20, 66]),
        ("filter:100", [None, 10, 33]),  # 192 > 100 dropped, others as max:100
        ("filter:192", [1, 19, 64]),  # natoms == N is kept
        (5, [5, 5, 5]),
        ([1, 2, 3], [1, 2, 3]),
    ],
)
def test_resolve_batch_sizes(spec, expected):
    assert resolve_batch_sizes(spec, NATOMS) == expected


@pytest.mark.parametrize("spec", ["foo", "auto:", "auto:0", "max:x", "filter:-1", "mixed:4", "max", 0, -2, True])
def test_bad_batch_size_names_the_value(spec):
    with pytest.raises(ValueError, match=repr(spec).replace("[", r"\[")):
        resolve_batch_sizes(spec, NATOMS)


def test_batch_size_list_and_filter_errors():
    with pytest.raises(ValueError, match="2 entries for 3 systems"):
        resolve_batch_sizes([1, 2], NATOMS)
    with pytest.raises(ValueError, match=r"batch_size\[1\]"):
        resolve_batch_sizes([1, 0, 2], NATOMS)
    with pytest.raises(ValueError, match="drops every system"):
        resolve_batch_sizes("filter:2", NATOMS)


def test_nbatches():
    assert [nbatches(80, 1), nbatches(10, 3), nbatches(9, 3), nbatches(2, 5)] == [80, 4, 3, 1]


def test_probs_uniform_and_sys_size():
    np.testing.assert_allclose(system_probs([1, 3, 4, 2], auto_prob="prob_uniform"), [0.25] * 4)
    np.testing.assert_allclose(system_probs([1, 3, 4]), [1 / 8, 3 / 8, 4 / 8])
    np.testing.assert_allclose(system_probs([1, 3, 4], auto_prob="prob_sys_size;0:3:1.0"), [1 / 8, 3 / 8, 4 / 8])


def test_probs_block_form():
    # block [0,1) weight 0.2; block [1,3) weight 0.8 shared 3:4
    probs = system_probs([1, 3, 4], auto_prob="prob_sys_size;0:1:0.2;1:3:0.8")
    np.testing.assert_allclose(probs, [0.2, 0.8 * 3 / 7, 0.8 * 4 / 7])
    # weights 1 and 3 normalise to 0.25 / 0.75; system 3 is in no block
    probs = system_probs([2, 6, 5, 9], auto_prob="prob_sys_size;0:1:1;1:3:3")
    np.testing.assert_allclose(probs, [0.25, 0.75 * 6 / 11, 0.75 * 5 / 11, 0.0])


@pytest.mark.parametrize(
    "auto_prob",
    [
        "prob_size",
        "prob_sys_size;",
        "prob_sys_size;0:4:1",
        "prob_sys_size;1:1:1",
        "prob_sys_size;0:2:-1",
        "prob_sys_size;0:2:1;1:3:1",
        "prob_sys_size;0:x:1",
        "prob_sys_size;0:2:1:5",
        "prob_sys_size;0:2:0",
    ],
)
def test_bad_auto_prob(auto_prob):
    with pytest.raises(ValueError, match="auto_prob"):
        system_probs([1, 2, 3], auto_prob=auto_prob)


def test_sys_probs_with_auto_entries():
    # 0.5 given; the remaining 0.5 shared by the negative entries in proportion to nbatch 1:3
    np.testing.assert_allclose(system_probs([10, 1, 3], sys_probs=[0.5, -1, -1]), [0.5, 0.125, 0.375])
    np.testing.assert_allclose(system_probs([1, 1, 1], sys_probs=[0.5, 0.5, -1]), [0.5, 0.5, 0.0])
    np.testing.assert_allclose(system_probs([1, 3], sys_probs=[0.25, 0.75], auto_prob="prob_uniform"), [0.25, 0.75])
    np.testing.assert_allclose(system_probs([2, 6], sys_probs=[-1, -1]), [0.25, 0.75])


def test_sys_probs_errors():
    with pytest.raises(ValueError, match="> 1"):
        system_probs([1, 1, 1], sys_probs=[0.6, 0.5, -1])
    with pytest.raises(ValueError, match="not 1"):
        system_probs([1, 1], sys_probs=[0.3, 0.3])
    with pytest.raises(ValueError, match="2 entries for 3 systems"):
        system_probs([1, 1, 1], sys_probs=[0.5, 0.5])
    system_probs([1, 1], sys_probs=[0.5, 0.5 + 5e-9])  # within the 1e-8 tolerance


def _take(sampler: FrameSampler, n: int) -> list[list[int]]:
    return [next(sampler).tolist() for _ in range(n)]


def test_sampler_covers_every_frame_once_per_epoch():
    sampler = FrameSampler(10, 3, np.random.default_rng(0))
    assert len(sampler) == 4
    epochs = [_take(sampler, 4) for _ in range(3)]
    for batches in epochs:
        assert [len(b) for b in batches] == [3, 3, 3, 1]  # drop_last=False: short last batch
        assert sorted(i for b in batches for i in b) == list(range(10))
    assert epochs[0] != epochs[1]  # a new shuffle every epoch
    assert sampler.epoch == 3


def test_sampler_is_reproducible():
    a = _take(FrameSampler(7, 2, np.random.default_rng(42)), 12)
    b = _take(FrameSampler(7, 2, np.random.default_rng(42)), 12)
    c = _take(FrameSampler(7, 2, np.random.default_rng(43)), 12)
    assert a == b and a != c


def _is_plain(value) -> bool:
    """Only the types `torch.load(weights_only=True)` accepts without allow-listing (no numpy objects)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_is_plain(v) for v in value)
    return type(value) in (int, float, str, bool, type(None))


def test_sampler_restores_from_state_dict():
    sampler = FrameSampler(10, 3, np.random.default_rng(1))
    _take(sampler, 5)  # mid-way through the second epoch
    state = sampler.state_dict()
    assert _is_plain(state)
    saved = pickle.dumps(state)  # as a training checkpoint would
    expected = _take(sampler, 10)
    restored = FrameSampler(10, 3, np.random.default_rng(999))
    restored.load_state_dict(pickle.loads(saved))
    assert _take(restored, 10) == expected and restored.epoch == sampler.epoch


def test_sampler_state_for_other_system_is_refused():
    state = FrameSampler(10, 3, np.random.default_rng(1)).state_dict()
    with pytest.raises(ValueError, match="10 frames"):
        FrameSampler(11, 3, np.random.default_rng(1)).load_state_dict(state)
