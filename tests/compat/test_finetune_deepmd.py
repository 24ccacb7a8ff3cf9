"""Fine-tuning a DeePMD-kit checkpoint: before any step the fine-tuned model is DeePMD-kit's model plus the bias change.

The pretrained model is a synthetic DeePMD-kit 3.2 checkpoint (see test_deepmd_checkpoint.py); its energies come
from DeePMD-kit's own NumPy backend, so neither the reference nor the expected bias change is computed by deeppot.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

pytest.importorskip("deepmd.dpmodel")

from compat.deepmd_ref import deepmd_energy, frames, model_section, system_path
from compat.test_deepmd_checkpoint import write_deepmd_checkpoint

from deeppot.config.input import normalize_input
from deeppot.train.trainer import RunOptions, Trainer


def few_frames(tmp_path, nframes: int) -> str:
    src, dst = system_path("water"), tmp_path / "water"
    (dst / "set.000").mkdir(parents=True)
    for f in ("type.raw", "type_map.raw"):
        shutil.copy(src / f, dst / f)
    for key in ("coord", "box", "energy", "force"):
        np.save(dst / "set.000" / f"{key}.npy", np.load(src / "set.000" / f"{key}.npy")[:nframes])
    return str(dst)


def test_finetuned_deepmd_checkpoint_equals_deepmd_plus_the_bias_change(tmp_path):
    reference = write_deepmd_checkpoint(tmp_path / "pre.pt", "water-two_side-f64")
    coord, atype, box, names = frames("water", 3)
    assert names == ["O", "H"]
    section = model_section("water", type_one_side=False, activation="gelu")
    section["type_map"], section["descriptor"]["sel"] = ["H", "O"], section["descriptor"]["sel"][::-1]
    config = {"model": section, "learning_rate": {"start_lr": 1e-3},
              "training": {"training_data": {"systems": [few_frames(tmp_path, 3)], "batch_size": 1},
                           "numb_steps": 1, "seed": 1}}
    run = Trainer(normalize_input(config), RunOptions(workdir=tmp_path, device=torch.device("cpu"),
                                                      finetune=tmp_path / "pre.pt"))
    ref_energy, ref_atom = deepmd_energy(reference, coord, atype, box)
    ours = run.model(torch.as_tensor(coord), torch.as_tensor(1 - atype), torch.as_tensor(box))  # O,H -> H,O
    labels = np.load(system_path("water") / "set.000" / "energy.npy")[:3]
    counts = np.tile(np.bincount(1 - atype, minlength=2), (3, 1)).astype(float)
    delta, *_ = np.linalg.lstsq(counts, labels - ref_energy, rcond=None)  # change-by-statistic, independently
    shift = delta[1 - atype]  # each atom's bias change, by its new type
    np.testing.assert_allclose(ours["atom_energy"].detach().numpy(), ref_atom + shift, rtol=0, atol=1e-8)
    np.testing.assert_allclose(ours["energy"].detach().numpy(), ref_energy + counts @ delta, rtol=1e-12, atol=1e-7)
