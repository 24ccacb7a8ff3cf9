"""Shared by this folder's tests: the folder on sys.path (they build systems with `test_dp_test`'s helpers) and a
small two-type model saved as model.dp."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from test_dp_test import CONFIG

from deeppot.io import save_model
from deeppot.model import EnergyModel


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    """test_dp_test's CONFIG with seed-0 weights, as tmp_path/model.dp."""
    torch.manual_seed(0)
    save_model(EnergyModel.from_config(CONFIG), tmp_path / "model.dp")
    return tmp_path / "model.dp"
