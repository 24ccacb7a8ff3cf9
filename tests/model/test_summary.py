"""`deeppot.model.summary`: the element table against ASE's, observed types from data and from output biases."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import make_model

from deeppot.model.summary import ELEMENTS, by_atomic_number, observed_in, observed_types


def test_element_table_is_ases():
    ase_data = pytest.importorskip("ase.data")
    assert list(ELEMENTS) == ase_data.chemical_symbols[1:119]


def test_observed_in_data_by_atomic_number():
    type_map = ["O", "H", "Cu", "X"]
    atypes = [np.array([0, 1, 1]), np.array([3, 0]), np.array([1])]  # Cu never occurs; X is no element
    assert observed_in(atypes, type_map) == ["H", "O", "X"]
    assert by_atomic_number(["Y2", "Fe", "X1", "He"]) == ["He", "Fe", "Y2", "X1"]  # non-elements keep their order


def test_observed_types_from_info_or_output_bias():
    model = make_model(ntypes=3, sel=(8, 8, 8))  # O, H, C
    with torch.no_grad():
        model.fitting.out_bias[0] = 0.0
    assert observed_types(model) == {"type_num": 2, "observed_type": ["H", "C"]}
    model.config["info"] = {"observed_type": ["O"]}  # recorded at training: it wins
    assert observed_types(model) == {"type_num": 1, "observed_type": ["O"]}
