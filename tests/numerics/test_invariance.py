"""Symmetries of the energy: rotation, translation, permutation, periodic images; batching; precision."""

from __future__ import annotations

import math

import pytest
import torch
from helpers import make_model, random_system


def rotation(seed: int) -> torch.Tensor:
    q, _ = torch.linalg.qr(torch.randn(3, 3, generator=torch.Generator().manual_seed(seed), dtype=torch.float64))
    return q * torch.sign(torch.linalg.det(q))  # proper rotation


@pytest.fixture(params=[True, False], ids=["one_side", "two_side"])
def model(request):
    return make_model(type_one_side=request.param)


def test_rotation(model):
    coord, atype, box = random_system()
    rot = rotation(1)
    ref = model(coord, atype, box)
    out = model(coord @ rot, atype, box @ rot)
    torch.testing.assert_close(out["energy"], ref["energy"], rtol=1e-12, atol=0)
    torch.testing.assert_close(out["force"], ref["force"] @ rot, rtol=1e-9, atol=1e-10)
    v_ref = ref["virial"].reshape(3, 3)
    torch.testing.assert_close(out["virial"].reshape(3, 3), rot.T @ v_ref @ rot, rtol=1e-9, atol=1e-10)


def test_translation_and_wrapping(model):
    coord, atype, box = random_system()
    ref = model(coord, atype, box)["energy"]
    shifted = coord + torch.tensor([1.3, -2.1, 0.7], dtype=torch.float64)
    torch.testing.assert_close(model(shifted, atype, box)["energy"], ref, rtol=1e-12, atol=0)
    wrapped = coord.clone()
    wrapped[0, 3] += 2 * box[0, 0] - box[0, 2]  # move atom 3 by lattice vectors
    torch.testing.assert_close(model(wrapped, atype, box)["energy"], ref, rtol=1e-12, atol=0)


def test_permutation_of_same_type_atoms(model):
    coord, atype, box = random_system()
    ref = model(coord, atype, box)
    same = torch.nonzero(atype == 1).ravel()
    perm = torch.arange(coord.shape[1])
    perm[same] = same.flip(0)
    out = model(coord[:, perm], atype[perm], box)
    torch.testing.assert_close(out["energy"], ref["energy"], rtol=1e-12, atol=0)
    torch.testing.assert_close(out["force"], ref["force"][:, perm], rtol=1e-10, atol=1e-12)


def test_energy_depends_on_types(model):
    """Guard for the tests above: swapping different-type atoms must change the energy."""
    coord, atype, box = random_system()
    swapped = atype.clone()
    swapped[[0, 1]] = swapped[[1, 0]]
    assert not math.isclose(model(coord, atype, box)["energy"].item(), model(coord, swapped, box)["energy"].item(),
                            rel_tol=1e-6)


def test_batch_equals_frames_one_by_one(model):
    coord, atype, box = random_system(nframes=3, seed=5)
    box = box * torch.tensor([1.0, 1.05, 0.95], dtype=torch.float64)[:, None, None]  # different cells per frame
    batch = model(coord, atype, box)
    for f in range(3):
        one = model(coord[f:f + 1], atype, box[f:f + 1])
        for key in ("energy", "force", "virial"):
            torch.testing.assert_close(batch[key][f:f + 1], one[key], rtol=1e-12, atol=1e-12)


def test_float32_matches_float64():
    m64 = make_model(precision="float64")
    m32 = make_model(precision="float32")
    m32.load_state_dict(m64.state_dict())  # copy_ casts the float64 weights to float32
    coord, atype, box = random_system()
    out64, out32 = m64(coord, atype, box), m32(coord, atype, box)
    assert out32["energy"].dtype == torch.float64  # energies are reduced in float64
    torch.testing.assert_close(out32["energy"], out64["energy"], rtol=1e-5, atol=0)
    torch.testing.assert_close(out32["force"], out64["force"], rtol=1e-4, atol=1e-5)
    assert not torch.equal(out32["energy"], out64["energy"])  # really computed in float32
