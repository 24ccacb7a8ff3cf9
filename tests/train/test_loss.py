"""The `ener` loss (spec §7.2-7.4) against a numpy transcription of the spec formulas, and DeePMD's dpmodel loss."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from deeppot.train.loss import EnergyLoss

NF, NLOC = 3, 5
START_LR = 1e-3
ALL_TERMS = {"start_pref_e": 0.02, "limit_pref_e": 1.0, "start_pref_f": 1000.0, "limit_pref_f": 1.0,
             "start_pref_v": 0.5, "limit_pref_v": 2.0, "start_pref_ae": 0.3, "limit_pref_ae": 0.7,
             "start_pref_pf": 2.0, "limit_pref_pf": 3.0}
ALL_FOUND = {"energy": True, "force": True, "virial": True, "atom_ener": True, "atom_pref": True}


def batch(seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    pred = {"energy": rng.normal(size=NF) * 3, "force": rng.normal(size=(NF, NLOC, 3)),
            "virial": rng.normal(size=(NF, 9)), "atom_energy": rng.normal(size=(NF, NLOC))}
    label = {"energy": rng.normal(size=NF) * 3, "force": rng.normal(size=(NF, NLOC, 3)),
             "virial": rng.normal(size=(NF, 9)), "atom_ener": rng.normal(size=(NF, NLOC)),
             "atom_pref": rng.uniform(0.5, 2.0, size=(NF, NLOC))}
    return pred, label


def tensors(arrays: dict[str, np.ndarray], grad: bool = False) -> dict[str, torch.Tensor]:
    return {k: torch.tensor(v, dtype=torch.float64, requires_grad=grad) for k, v in arrays.items()}


def reference(prefs: dict[str, float], pred, label, found, lr: float, intensive: bool = False):
    """Spec §7.2-7.4 in numpy: (loss, metrics) over the terms whose start AND limit prefactors are non-zero."""
    n, q = NLOC, (2 if intensive else 1)
    mse = {"e": np.mean((pred["energy"] - label["energy"]) ** 2),
           "f": np.mean((label["force"] - pred["force"]) ** 2),
           "v": np.mean((label["virial"] - pred["virial"]) ** 2),
           "ae": np.mean((label["atom_ener"] - pred["atom_energy"]) ** 2),
           "pf": np.mean((label["force"] - pred["force"]) ** 2 * np.repeat(label["atom_pref"][..., None], 3, -1))}
    scale = {"e": n**-q, "f": 1.0, "v": n**-q, "ae": 1.0, "pf": 1.0}
    find = {"e": found["energy"], "f": found["force"], "v": found["virial"], "ae": found["atom_ener"],
            "pf": found["force"] and found["atom_pref"]}
    loss, metrics = 0.0, {}
    for t in mse:
        start, limit = prefs.get(f"start_pref_{t}", 0.0), prefs.get(f"limit_pref_{t}", 0.0)
        if start == 0.0 or limit == 0.0:
            continue
        pref = (limit + (start - limit) * lr / START_LR) * float(find[t])
        loss += pref * scale[t] * mse[t]
        per_atom = 1.0 / n if t in ("e", "v") else 1.0
        metrics[f"rmse_{t}"] = math.sqrt(mse[t]) * per_atom if find[t] else math.nan
    metrics["rmse"] = math.sqrt(loss)
    return loss, metrics


def run(prefs, pred, label, found, lr, **section):
    loss_fn = EnergyLoss({**prefs, **section}, START_LR)
    loss, metrics = loss_fn(tensors(pred), tensors(label), found, NLOC, lr)
    return loss_fn, float(loss), loss_fn.display(metrics)


def assert_metrics_equal(got: dict[str, float], expected: dict[str, float]):
    assert sorted(got) == sorted(expected)
    for k, v in expected.items():
        assert (math.isnan(got[k]) and math.isnan(v)) or got[k] == pytest.approx(v, rel=1e-12), k


@pytest.mark.parametrize("lr", [START_LR, 3e-4, 1e-8])
@pytest.mark.parametrize("intensive", [False, True])
def test_all_terms_against_reference(lr, intensive):
    pred, label = batch()
    loss_fn, loss, metrics = run(ALL_TERMS, pred, label, ALL_FOUND, lr, intensive_ener_virial=intensive)
    ref_loss, ref_metrics = reference(ALL_TERMS, pred, label, ALL_FOUND, lr, intensive)
    assert loss == pytest.approx(ref_loss, rel=1e-12)
    assert_metrics_equal(metrics, ref_metrics)
    assert loss_fn.metric_keys == ["rmse", "rmse_ae", "rmse_e", "rmse_f", "rmse_pf", "rmse_v"]


def test_prefactor_schedule():
    loss_fn = EnergyLoss(ALL_TERMS, START_LR)
    assert loss_fn.prefactor("f", START_LR) == pytest.approx(1000.0)  # lr = start_lr -> start prefactor
    assert loss_fn.prefactor("f", 0.0) == pytest.approx(1.0)  # lr -> 0 -> limit prefactor
    assert loss_fn.prefactor("e", START_LR / 4) == pytest.approx(1.0 + (0.02 - 1.0) / 4)
    lr = torch.tensor(START_LR / 4, dtype=torch.float64)
    assert float(loss_fn.prefactor("v", lr)) == pytest.approx(2.0 + (0.5 - 2.0) / 4)


def test_default_prefactors_give_e_and_f_only():
    pred, label = batch(1)
    defaults = {"start_pref_e": 0.02, "limit_pref_e": 1.0, "start_pref_f": 1000.0, "limit_pref_f": 1.0}
    loss_fn, loss, metrics = run(defaults, pred, label, ALL_FOUND, 5e-4)
    assert loss_fn.metric_keys == ["rmse", "rmse_e", "rmse_f"]
    # by hand: pref_e = 1 + (0.02 − 1)·0.5 = 0.51, pref_f = 1 + 999·0.5 = 500.5
    expected = (0.51 / NLOC * np.mean((pred["energy"] - label["energy"]) ** 2)
                + 500.5 * np.mean((pred["force"] - label["force"]) ** 2))
    assert loss == pytest.approx(expected, rel=1e-12)
    assert metrics["rmse"] == pytest.approx(math.sqrt(expected), rel=1e-12)


def test_term_inactive_unless_start_and_limit_nonzero():
    pred, label = batch(2)
    prefs = {**ALL_TERMS, "start_pref_v": 0.0, "limit_pref_v": 1.0}  # PT: no virial term (TF would train it)
    loss_fn, loss, metrics = run(prefs, pred, label, ALL_FOUND, 3e-4)
    assert "rmse_v" not in metrics and "rmse_v" not in loss_fn.metric_keys
    label["virial"] = label["virial"] + 100.0
    assert run(prefs, pred, label, ALL_FOUND, 3e-4)[1] == loss
    ref_loss, ref_metrics = reference(prefs, pred, label, ALL_FOUND, 3e-4)
    assert loss == pytest.approx(ref_loss, rel=1e-12)
    assert_metrics_equal(metrics, ref_metrics)


@pytest.mark.parametrize("missing", ["energy", "virial", "atom_ener", "atom_pref"])
@pytest.mark.parametrize("as_type", [bool, float, torch.tensor])
def test_missing_label_gives_nan_metric_and_no_contribution(missing, as_type):
    pred, label = batch(3)
    found = {k: as_type(k != missing) if as_type is not torch.tensor else torch.tensor(float(k != missing))
             for k in ALL_FOUND}
    _, loss, metrics = run(ALL_TERMS, pred, label, found, 3e-4)
    ref_loss, ref_metrics = reference(ALL_TERMS, pred, label, {k: k != missing for k in ALL_FOUND}, 3e-4)
    term = {"energy": "e", "virial": "v", "atom_ener": "ae", "atom_pref": "pf"}[missing]
    assert math.isnan(metrics[f"rmse_{term}"])
    assert loss == pytest.approx(ref_loss, rel=1e-12)
    assert_metrics_equal(metrics, ref_metrics)
    # the missing label's (default) values do not matter
    label[missing] = label[missing] * 7.0 + 1.0
    assert run(ALL_TERMS, pred, label, found, 3e-4)[1] == pytest.approx(loss, rel=1e-14)


def test_missing_force_disables_force_and_pf():
    pred, label = batch(4)
    found = {**ALL_FOUND, "force": False}
    _, loss, metrics = run(ALL_TERMS, pred, label, found, 3e-4)
    assert math.isnan(metrics["rmse_f"]) and math.isnan(metrics["rmse_pf"])
    assert loss == pytest.approx(reference(ALL_TERMS, pred, label, found, 3e-4)[0], rel=1e-12)


def test_label_absent_from_dict_counts_as_missing():
    pred, label = batch(5)
    del label["virial"]
    loss_fn = EnergyLoss(ALL_TERMS, START_LR)
    loss, metrics = loss_fn(tensors(pred), tensors(label), ALL_FOUND, NLOC, 3e-4)
    assert math.isnan(float(metrics["rmse_v"]))
    found = {**ALL_FOUND, "virial": False}
    label["virial"] = np.zeros((NF, 9))
    assert float(loss) == pytest.approx(reference(ALL_TERMS, pred, label, found, 3e-4)[0], rel=1e-12)


def test_use_default_pf_ignores_find_atom_pref():
    pred, label = batch(6)
    label["atom_pref"] = np.ones((NF, NLOC))  # what the data loader holds when atom_pref.npy is absent
    found = {**ALL_FOUND, "atom_pref": False}
    _, _, metrics = run(ALL_TERMS, pred, label, found, 3e-4, use_default_pf=True)
    assert metrics["rmse_pf"] == pytest.approx(metrics["rmse_f"], rel=1e-12)  # unit weights: pf RMSE = force RMSE


def test_tensor_lr_and_find_match_floats_and_gradients_flow():
    pred, label = batch(7)
    loss_fn = EnergyLoss(ALL_TERMS, START_LR)
    p = tensors(pred, grad=True)
    found = {k: torch.tensor(1.0) for k in ALL_FOUND}
    loss_t, metrics_t = loss_fn(p, tensors(label), found, NLOC, torch.tensor(3e-4, dtype=torch.float64))
    loss_f, metrics_f = loss_fn(tensors(pred), tensors(label), ALL_FOUND, NLOC, 3e-4)
    assert float(loss_t.detach()) == pytest.approx(float(loss_f), rel=1e-14)
    assert loss_fn.display(metrics_t) == pytest.approx(loss_fn.display(metrics_f), rel=1e-14)
    assert all(m.dim() == 0 and not m.requires_grad for m in metrics_t.values())
    loss_t.backward()
    # d L_f / d F_pred = −2 · pref_f · ΔF / (nf·N·3) (+ the pf term); check the force gradient by hand
    pref_f = 1.0 + (1000.0 - 1.0) * 0.3
    pref_pf = 3.0 + (2.0 - 3.0) * 0.3
    diff = label["force"] - pred["force"]
    weight = pref_f + pref_pf * label["atom_pref"][..., None]
    np.testing.assert_allclose(p["force"].grad.numpy(), -2 * weight * diff / diff.size, rtol=1e-12)


def test_float32_predictions_give_float64_loss():
    pred, label = batch(8)
    loss_fn = EnergyLoss(ALL_TERMS, START_LR)
    p32 = {k: torch.tensor(v, dtype=torch.float32) for k, v in pred.items()}
    loss, metrics = loss_fn(p32, tensors(label), ALL_FOUND, NLOC, 3e-4)
    assert loss.dtype == torch.float64 and metrics["rmse_f"].dtype == torch.float64
    assert float(loss) == pytest.approx(reference(ALL_TERMS, pred, label, ALL_FOUND, 3e-4)[0], rel=1e-5)


@pytest.mark.parametrize("intensive", [False, True])
def test_matches_deepmd_dpmodel_loss(intensive):
    module = pytest.importorskip("deepmd.dpmodel.loss.ener")
    pred, label = batch(9)
    theirs = module.EnergyLoss(START_LR, **ALL_TERMS, intensive_ener_virial=intensive)
    their_label = {**label, "atom_pref": np.repeat(label["atom_pref"], 3, axis=1)}  # DeePMD repeats it over x,y,z
    their_label |= {f"find_{k}": 1.0 for k in ALL_FOUND} | {"find_virial": 0.0}
    their_loss, their_more = theirs.call(3e-4, NLOC, pred, their_label)
    _, loss, metrics = run(ALL_TERMS, pred, label, {**ALL_FOUND, "virial": False}, 3e-4,
                           intensive_ener_virial=intensive)
    assert loss == pytest.approx(float(their_loss), rel=1e-12)
    assert_metrics_equal(metrics, {k: float(v) for k, v in their_more.items() if not k.startswith("l2_")})
