"""The replayed step's inputs: frames and learning rates staged by one copy into views a graph holds."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from deeppot.train.graph_step import StepInputs


def test_staged_frames_and_rates_reach_the_same_views():
    inputs = StepInputs(3, 1e-3, 2.0, torch.device("cpu"))
    index, lr, adam_lr = inputs.index(2), inputs.lr, inputs.adam_lr  # what a captured graph would read
    assert lr.dtype == torch.float64 and adam_lr.dtype == torch.float32 and lr.dim() == adam_lr.dim() == 0
    assert float(lr) == 1e-3 and float(adam_lr) == float(np.float32(2e-3))
    for frames, rate in ((np.array([7, 4]), 3.3e-4), (np.array([5, 0, 9]), 1.25e-7)):
        inputs.stage(frames, rate)
        assert index.tolist() == frames[:2].tolist() and inputs.index(len(frames)).tolist() == frames.tolist()
        assert float(lr) == rate and float(adam_lr) == float(np.float32(2 * rate))


def test_a_batch_larger_than_the_inputs_is_refused():
    with pytest.raises(ValueError, match="a batch of 4 frames; the step's inputs hold 3"):
        StepInputs(3, 1e-3, 1.0, torch.device("cpu")).stage(np.arange(4), 1e-3)
