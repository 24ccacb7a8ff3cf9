"""Fused Triton embedding kernels against the plain-PyTorch embedding (values, dG/ds, weight gradients, training)."""

from __future__ import annotations

import functools

import pytest
import torch
from helpers import make_model, padding_chunks, pairs_of, training_gradients, trimmed_pairs

from deeppot.model import analytic
from deeppot.model.env_mat import env_mat_raw, normalize_env_mat

embedding = pytest.importorskip("deeppot.kernels.embedding")
pytestmark = pytest.mark.filterwarnings("ignore::deeppot.nlist.NeighborOverflowWarning")
if embedding.triton is None:
    pytest.skip("triton is not installed", allow_module_level=True)

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
TOL = {torch.float64: dict(rtol=1e-12, atol=1e-12), torch.float32: dict(rtol=2e-5, atol=2e-5)}


def model_and_rr(type_one_side=True, precision="float64", neuron=(4, 8, 16), sel=(5, 40), ntypes=2, seed=0):
    model = make_model(seed=seed, type_one_side=type_one_side, resnet_dt=False, precision=precision,
                       neuron=list(neuron), sel=list(sel), ntypes=ntypes).to(DEVICE)
    d = model.descriptor
    pairs = pairs_of(model, seed=seed, ntypes=ntypes).to(DEVICE)
    raw = env_mat_raw(pairs.rij.to(d.dtype), pairs.nlist_loc >= 0, d.rcut, d.rcut_smth)
    return model, normalize_env_mat(raw, pairs.center_type, d.davg, d.dstd).contiguous(), pairs.center_type


@pytest.fixture(autouse=True)
def poisoned_partial_sums(monkeypatch):
    """The backward's partial sums, unzeroed, come filled with NaN: a slice the kernel failed to store shows up in
    every gradient test below."""
    unpoisoned = embedding._partial_sums

    def poisoned(rr, nprog, width, zeroed):
        part = unpoisoned(rr, nprog, width, zeroed)
        return part if zeroed else part.fill_(float("nan"))

    monkeypatch.setattr(embedding, "_partial_sums", poisoned)


CASES = [  # (type_one_side, precision, neuron, sel, ntypes): doubling, same-width and no skips; partial blocks
    (True, "float64", (4, 8, 16), (5, 40), 2),
    (False, "float64", (4, 8, 16), (5, 40), 2),
    (True, "float32", (4, 8, 16), (33, 7), 2),
    (False, "float32", (6, 6, 12), (20, 20, 20), 3),
    (False, "float64", (5, 10, 7), (30, 3, 12), 3),
    (True, "float32", (25, 50, 100), (46, 92), 2),  # the water benchmark's net
]


@pytest.mark.parametrize(("type_one_side", "precision", "neuron", "sel", "ntypes"), CASES)
def test_values_and_weight_gradients(type_one_side, precision, neuron, sel, ntypes):
    model, rr, center_type = model_and_rr(type_one_side, precision, neuron, sel, ntypes)
    d = model.descriptor
    assert embedding.fusable(d)
    g, dg = embedding.embed_all(d, rr, center_type)
    g_ref, dg_ref = analytic.embed_all(d, rr, center_type)
    torch.testing.assert_close(g, g_ref, **TOL[d.dtype])
    torch.testing.assert_close(dg, dg_ref, **TOL[d.dtype])
    # weights' gradients of a loss on both outputs: the mixed second derivatives d2G/(ds dtheta) included
    gen = torch.Generator(device=DEVICE).manual_seed(1)
    a, b = (torch.randn(g.shape, generator=gen, device=DEVICE, dtype=g.dtype) for _ in range(2))
    params = list(d.nets.parameters())
    grads = torch.autograd.grad((g * a).sum() + (dg * b).sum(), params)
    grads_ref = torch.autograd.grad((g_ref * a).sum() + (dg_ref * b).sum(), params)
    for got, want in zip(grads, grads_ref, strict=True):
        scale = want.abs().max()
        torch.testing.assert_close(got / scale, want / scale, **TOL[d.dtype])


def test_f16x3_weight_gradients_at_any_scale_of_the_loss():
    """The f16x3 backward brings each chunk's incoming gradients to float16's range by a power of two: a loss's
    gradients of any size give the weights' gradients to float32's accuracy (unscaled, 1e-9 lost them, 1e7 gave
    NaN)."""
    model, rr, center_type = model_and_rr(False, "float32", (6, 6, 12), (20, 20, 20), 3)
    d = model.descriptor
    g, dg = embedding.embed_all(d, rr, center_type, precision="f16x3")
    g_ref, dg_ref = analytic.embed_all(d, rr, center_type)
    torch.testing.assert_close(g, g_ref, **TOL[d.dtype])
    torch.testing.assert_close(dg, dg_ref, **TOL[d.dtype])
    params = list(d.nets.parameters())
    gen = torch.Generator(device=DEVICE).manual_seed(1)
    for amplitude in (1e-9, 1.0, 1e7):
        a, b = (amplitude * torch.randn(g.shape, generator=gen, device=DEVICE, dtype=g.dtype) for _ in range(2))
        grads = torch.autograd.grad((g * a).sum() + (dg * b).sum(), params, retain_graph=True)
        grads_ref = torch.autograd.grad((g_ref * a).sum() + (dg_ref * b).sum(), params, retain_graph=True)
        for got, want in zip(grads, grads_ref, strict=True):
            scale = want.abs().max()
            torch.testing.assert_close(got / scale, want / scale, **TOL[d.dtype])


def test_tangent_is_the_derivative():
    model, rr, center_type = model_and_rr(type_one_side=False)
    d = model.descriptor
    _, dg = embedding.embed_all(d, rr, center_type)
    s = rr[..., :1].detach().requires_grad_(True)
    g_ref, _ = analytic.embed_all(d, torch.cat([s, rr[..., 1:]], dim=-1), center_type)
    # dG_m/ds by autograd of the reference, column by column (slots are independent, so the sum separates)
    for m in (0, 7, 15):
        (col,) = torch.autograd.grad(g_ref[..., m].sum(), s, retain_graph=True)
        torch.testing.assert_close(dg[..., m], col[..., 0], rtol=1e-12, atol=1e-12)


def test_training_gradients_match_the_plain_path():
    model, _, _ = model_and_rr(type_one_side=False, precision="float32", neuron=(6, 12, 24), sel=(10, 30))
    pairs = pairs_of(model, seed=3).to(DEVICE)
    results = []
    for fused in (False, True):
        model.embed_fn = analytic.embed_all
        if fused:
            assert model.use_fused_kernels(DEVICE)
        out = model.forward_pairs(pairs, create_graph=True)
        loss = out["force"].square().mean() + out["energy"].square().mean() + out["virial"].square().mean()
        results.append((out, torch.autograd.grad(loss, list(model.parameters()))))
    (ref, ref_grads), (got, grads) = results
    for key in ("energy", "force", "virial"):
        torch.testing.assert_close(got[key], ref[key], rtol=1e-5, atol=1e-5)
    for g, want in zip(grads, ref_grads, strict=True):
        scale = want.abs().max()
        torch.testing.assert_close(g / scale, want / scale, rtol=1e-4, atol=1e-4)


def test_trimmed_lists_through_the_kernels():
    """Lists narrower than sel (deeppot.model.slots): the kernels walk the trimmed blocks, the model adds the
    dropped padding; the same values and training gradients as the plain path on full lists."""
    model, _, _ = model_and_rr(type_one_side=False, neuron=(6, 12, 24), sel=(20, 40))
    full = pairs_of(model, seed=3).to(DEVICE)
    results = []
    for pairs, fused in ((full, False), (trimmed_pairs(model, full), True)):
        model.embed_fn = analytic.embed_all
        assert not fused or model.use_fused_kernels(DEVICE)
        results.append(training_gradients(model, pairs))
    (ref, ref_grads), (got, grads) = results
    for key in ("energy", "force", "virial"):
        torch.testing.assert_close(got[key], ref[key], rtol=1e-11, atol=1e-12)
    for g, want in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(g, want, rtol=1e-9, atol=1e-11)


def test_padding_chunks_take_the_stand_ins_values():
    """On trimmed lists the kernels copy the stand-in's G into chunks of padding only and add their gradients to
    its row: the same values and weight gradients as embedding every slot, for any upstream gradients (padding
    slots' included)."""
    model, _, _ = model_and_rr(type_one_side=False, neuron=(6, 12, 24), sel=(24, 40))
    d = model.descriptor
    pairs = trimmed_pairs(model, pairs_of(model, seed=3).to(DEVICE))
    assert padding_chunks(pairs, embedding.BLOCK_J) > 0
    rr = analytic.env_rows(d, *pairs.tensors(), pairs.layout).rr
    torch.manual_seed(0)
    up = torch.randn(2, *rr.shape[:3], d.nets.neuron[-1], dtype=rr.dtype, device=DEVICE)
    results = []
    for fn in (functools.partial(embedding.embed_all, nlist=pairs.nlist_loc), analytic.embed_all):
        g, dg = fn(d, rr, pairs.center_type, pairs.layout)
        loss = (g * up[0]).sum() + (dg * up[1]).sum()
        results.append((g, dg, torch.autograd.grad(loss, list(d.nets.parameters()))))
    for got, want in zip(*results, strict=True):
        for x, y in zip(got, want, strict=True):
            torch.testing.assert_close(x, y, **TOL[torch.float64])


def test_refuses_positions_that_need_gradients():
    model, rr, center_type = model_and_rr()
    with pytest.raises(ValueError, match="no gradient with respect to positions"):
        embedding.embed_all(model.descriptor, rr.requires_grad_(True), center_type)


def test_unsupported_nets_are_not_fused():
    model = make_model(resnet_dt=True)
    assert not embedding.fusable(model.descriptor)
    model = make_model(resnet_dt=False, activation_function="gelu")
    assert not embedding.fusable(model.descriptor)
