"""The batched ensemble (`deeppot.infer.ensemble`) against the models evaluated one after another: energies,
forces and virials, the stacking of each model's own weights, the fallback for models that cannot be stacked,
and the model-deviation columns of `DeepPotential.deviation`."""

from __future__ import annotations

import copy
import logging

import numpy as np
import pytest
import torch
from helpers import make_model, one_thread, random_system  # noqa: F401  (one_thread: autouse)

from deeppot import md
from deeppot.infer import Evaluator
from deeppot.infer.ensemble import EnsembleEvaluator, evaluate_stacked, unbatchable_reason
from deeppot.infer.model_devi import deviation_columns
from deeppot.model import EnergyModel

KEYS = ("energy", "atom_energy", "force", "virial")
ARCHITECTURES = {  # two types, one-sided nets; three types, two-sided nets and an excluded type pair
    "one_side": dict(ntypes=2, sel=(24, 24), type_one_side=True),
    "two_side_3types": dict(ntypes=3, sel=(12, 16, 20), type_one_side=False, exclude_types=[[0, 2]]),
}


def perturbed(model: EnergyModel, seed: int, scale: float = 0.2) -> EnergyModel:
    """A copy with every weight and statistic moved by its own noise: models of one architecture that differ."""
    model = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
            if tensor.is_floating_point() and name != "min_nbor_dist":
                noise = torch.randn(tensor.shape, generator=generator, dtype=torch.float64).to(tensor.dtype)
                tensor.add_(scale * noise * (0.1 if "dstd" in name else 1.0))
    return model


def ensemble(nm: int, precision: str = "float64", arch: str = "one_side") -> list[EnergyModel]:
    base = make_model(precision=precision, **ARCHITECTURES[arch])
    return [perturbed(base, seed) for seed in range(nm)]


def neighbors(models: list[EnergyModel], periodic: bool, nframes: int = 2, natoms: int = 12):
    ntypes = len(models[0].type_map)
    coord, atype, box = random_system(natoms=natoms, ntypes=ntypes, nframes=nframes, seed=3)
    evaluator = Evaluator(models[0], "cpu", fused=False)
    return evaluator.neighbors(coord, atype[None].expand(nframes, -1), box if periodic else None)


def sequential(models: list[EnergyModel], flat) -> dict[str, torch.Tensor]:
    """The reference: each model through its own evaluator, stacked afterwards."""
    outs = [Evaluator(m, "cpu", fused=False).evaluate_neighbors(flat) for m in models]
    return {key: torch.stack([out[key] for out in outs]) for key in KEYS}


def assert_outputs_close(got: dict, want: dict, precision: str) -> None:
    rtol = 1e-12 if precision == "float64" else 2e-5
    for key in KEYS:
        scale = float(want[key].abs().max())
        torch.testing.assert_close(got[key], want[key], rtol=rtol, atol=rtol * scale, msg=key)


@pytest.mark.parametrize("arch", list(ARCHITECTURES))
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("nm", [2, 3])
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_batched_equals_sequential(precision: str, nm: int, periodic: bool, arch: str) -> None:
    models = ensemble(nm, precision, arch)
    flat = neighbors(models, periodic)
    batched = EnsembleEvaluator([Evaluator(m, "cpu") for m in models], batched=True)
    assert batched.batched
    got = batched.evaluate_neighbors(flat)
    assert got["force"].shape == (nm, 2, 12, 3) and got["virial"].shape == (nm, 2, 9)
    assert_outputs_close(got, sequential(models, flat), precision)


def test_chunks_that_split_frames_give_the_same_result() -> None:
    models = ensemble(3)
    flat = neighbors(models, periodic=True)
    whole = EnsembleEvaluator([Evaluator(m, "cpu") for m in models], batched=True)
    whole.chunk_atoms = 24
    chunked = EnsembleEvaluator([Evaluator(m, "cpu") for m in models], batched=True)
    chunked.chunk_atoms = 5  # 24 centres of 2 frames in 5 chunks
    assert_outputs_close(chunked.evaluate_neighbors(flat), whole.evaluate_neighbors(flat), "float64")


def test_each_model_keeps_its_own_weights() -> None:
    """Reordering the models reorders the outputs; and the models really differ, so a stack that lent one
    model's weights to all would fail here and in `test_batched_equals_sequential`."""
    models = ensemble(3, arch="two_side_3types")
    flat = neighbors(models, periodic=True)
    order = [2, 0, 1]
    out = EnsembleEvaluator([Evaluator(m, "cpu") for m in models], True).evaluate_neighbors(flat)
    reordered = EnsembleEvaluator([Evaluator(models[i], "cpu") for i in order], True).evaluate_neighbors(flat)
    for key in KEYS:
        torch.testing.assert_close(reordered[key], out[key][order], rtol=1e-12, atol=1e-12)
    energy = out["energy"][:, 0]
    assert (energy[:, None] - energy[None, :]).abs().add(torch.eye(3, dtype=energy.dtype)).min() > 1e-3
    assert (out["force"][0] - out["force"][1]).abs().max() > 1e-3


def mismatch(change: str) -> EnergyModel:
    """A model of the `one_side` ensemble's shape with one hyper-parameter changed."""
    arch = dict(ARCHITECTURES["one_side"])
    changes = {"neuron": dict(neuron=[4, 8, 8]), "sel": dict(sel=(20, 28)), "rcut_smth": dict(rcut_smth=0.5),
               "exclude_types": dict(exclude_types=[[0, 1]]), "activation_function": dict(activation_function="gelu"),
               "precision": dict(precision="float32")}
    return make_model(**{**arch, **changes[change]})


@pytest.mark.parametrize("change", ["neuron", "sel", "rcut_smth", "exclude_types", "activation_function",
                                    "precision"])
def test_architecture_mismatch_falls_back_to_sequential(change: str, caplog) -> None:
    """Hyper-parameters that change tensor shapes and those that do not (sel (24, 24) against (20, 28), an
    excluded pair, the switch radius, the activation) all keep the models apart, with the reason logged once."""
    models = [*ensemble(2), mismatch(change)]
    flat = neighbors(models, periodic=True)
    with caplog.at_level(logging.INFO, logger="deeppot.infer.ensemble"):
        ens = EnsembleEvaluator([Evaluator(m, "cpu") for m in models])
    assert not ens.batched
    assert [r.getMessage() for r in caplog.records if "one after another" in r.getMessage()] == [
        f"model deviation: 3 models evaluated one after another: {unbatchable_reason(models)}"]
    assert change in unbatchable_reason(models)
    assert_outputs_close(ens.evaluate_neighbors(flat), sequential(models, flat), "float64")
    with pytest.raises(ValueError, match="cannot be evaluated in one batched call: model 2 differs"):
        EnsembleEvaluator([Evaluator(m, "cpu") for m in models], batched=True)


def test_models_without_a_stackable_pair_stage_fall_back() -> None:
    base = make_model(resnet_dt=False, **ARCHITECTURES["one_side"])  # resnet_dt False: compressible
    models = [base, perturbed(base, 1)]
    autograd = copy.deepcopy(models[1])
    autograd.analytic_forces = False
    assert "hand-written derivative" in unbatchable_reason([models[0], autograd])
    compressed = copy.deepcopy(models[1])
    compressed.descriptor.enable_compression(0.5, 0.05, 2.0)
    assert "compressed" in unbatchable_reason([models[0], compressed])
    assert unbatchable_reason(models[:1]) == "a single model"
    flat = neighbors(models, periodic=True)
    ens = EnsembleEvaluator([Evaluator(m, "cpu") for m in (models[0], compressed)])
    assert not ens.batched and ens.evaluate_neighbors(flat)["force"].shape == (2, 2, 12, 3)
    lone = EnsembleEvaluator([Evaluator(models[0], "cpu")], batched=True)  # nothing to batch: no error
    assert lone.evaluate_neighbors(flat)["force"].shape == (1, 2, 12, 3)


def test_automatic_choice_stacks_stackable_models(caplog) -> None:
    evaluators = [Evaluator(m, "cpu") for m in ensemble(2)]
    with caplog.at_level(logging.INFO, logger="deeppot.infer.ensemble"):
        assert EnsembleEvaluator(evaluators).batched
    assert "2 models evaluated in one batched call" in caplog.text
    assert not EnsembleEvaluator(evaluators, batched=False).batched


def test_beside_fused_evaluators_the_stack_takes_only_small_calls(monkeypatch) -> None:
    """Where the models' own evaluators run the fused kernels, calls above the crossover size go model by model
    (the fused kernels outrun the stacked PyTorch stage there); batched=True stacks every call."""
    from deeppot.infer import ensemble as module

    models = ensemble(2)
    flat = neighbors(models, periodic=True)  # 24 centres
    stacked_calls = []
    monkeypatch.setattr(module, "evaluate_stacked", lambda *a: stacked_calls.append(1) or evaluate_stacked(*a))
    evaluators = [Evaluator(m, "cpu") for m in models]
    for ev in evaluators:
        ev.fused = True  # as on a GPU (the stage itself stays PyTorch here)
    auto, insist = EnsembleEvaluator(evaluators), EnsembleEvaluator(evaluators, batched=True)
    monkeypatch.setattr(module, "FUSED_CROSSOVER_ATOMS", 100)
    auto.evaluate_neighbors(flat)
    assert len(stacked_calls) == 1
    monkeypatch.setattr(module, "FUSED_CROSSOVER_ATOMS", 10)
    sequential = auto.evaluate_neighbors(flat)
    assert len(stacked_calls) == 1
    batched = insist.evaluate_neighbors(flat)
    assert len(stacked_calls) == 2
    for key in KEYS:
        torch.testing.assert_close(batched[key], sequential[key], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("periodic", [True, False])
def test_deep_potential_deviation_columns_unchanged(periodic: bool) -> None:
    """`DeepPotential.deviation` batched against the same potential model by model and against the columns
    computed here from each model's own evaluation."""
    models = ensemble(3)
    coord, atype, box = random_system(natoms=12, nframes=1, seed=5)
    cell = box[0] if periodic else None
    columns = {}
    for batched in (None, False):  # the default (stacked) and model by model
        pot = md.DeepPotential(models, atype, skin=0.5, device="cpu", batched=batched)
        assert pot.ensemble.batched == (batched is None)
        pot.compute(coord[0], cell, rebuild=True)
        columns[batched] = pot.deviation()
    ref = sequential(models, pot.flat)
    want = deviation_columns(*(ref[key].numpy() / d for key, d in (("energy", 12), ("force", 1), ("virial", 12))))
    np.testing.assert_array_equal(columns[False], want[0])
    np.testing.assert_allclose(columns[None], want[0], rtol=1e-10, atol=1e-14)
    assert (columns[None] > 0).all()
