"""MD tests run many tiny steps: one thread avoids oversubscribing a shared CPU (tiny ops gain nothing from more)."""

import pytest
import torch


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
