"""Process-wide settings a test may change (`deeppot train --tf32` turns on TF32 GEMMs for its process) are put
back after each test, so later float32 tests compare at float32 accuracy."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _restore_tf32_gemms():
    before = torch.backends.cuda.matmul.allow_tf32
    yield
    torch.backends.cuda.matmul.allow_tf32 = before
