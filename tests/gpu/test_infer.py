"""Inference on a GPU: the fused path against the PyTorch path on water supercells (skipped without CUDA)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from deeppot.infer import DeepPot
from deeppot.model import EnergyModel

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

WATER = Path(__file__).resolve().parents[2] / "examples" / "water"


def water_model(precision: str) -> EnergyModel:
    cfg = json.loads((WATER / "input.json").read_text())["model"]
    cfg["descriptor"]["precision"] = cfg["fitting_net"]["precision"] = precision
    torch.manual_seed(0)
    model = EnergyModel.from_config(cfg)
    with torch.no_grad():  # non-trivial statistics, so the normalisation is exercised
        model.descriptor.davg[..., 0] = 0.1
        model.descriptor.dstd[...] = 0.7
    return model


def supercell(reps: int):
    frame = WATER / "data" / "data_0"
    coord = np.load(frame / "set.000" / "coord.npy")[:2].reshape(2, -1, 3)
    box = np.load(frame / "set.000" / "box.npy")[:2].reshape(2, 3, 3)
    atype = np.loadtxt(frame / "type.raw", dtype=np.int64)
    shifts = np.array([[i, j, k] for i in range(reps) for j in range(reps) for k in range(reps)]) @ box[0]
    coord = (coord[:, None] + shifts[None, :, None]).reshape(2, -1, 3)
    return coord, (box * reps).reshape(2, 9), np.tile(atype, reps**3)


def host_syncs(call) -> list[str]:
    """The host syncs of call() (torch's sync debug mode), after the GPU's queue is drained."""
    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            call()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return [str(w.message) for w in caught if "synchroniz" in str(w.message)]


def assert_calls_agree(graphed, eager, coord, cells, atype, steps: int, tol: float, atomic: bool = False) -> None:
    """`steps` calls of both `DeepPot`s at moved positions give the same outputs to tol relative."""
    for step in range(steps):
        moved = coord + 0.02 * step * np.sin(np.arange(coord.size)).reshape(coord.shape)
        got, want = graphed.eval(moved, cells, atype, atomic=atomic), eager.eval(moved, cells, atype, atomic=atomic)
        for a, b in zip(got, want, strict=True):
            assert np.abs(a - b).max() <= tol * np.abs(b).max(), (step, np.abs(a - b).max(), np.abs(b).max())


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_fused_equals_pytorch_on_water_supercell(precision):
    model = water_model(precision)
    coord, cells, atype = supercell(2)  # 2 frames of 1,536 atoms
    fused = DeepPot(model, "cuda", fused=True, chunk_atoms=1000)  # chunks that split frames
    plain = DeepPot(model, "cuda", fused=False)
    got, want = fused.eval(coord, cells, atype, atomic=True), plain.eval(coord, cells, atype, atomic=True)
    tol = 1e-10 if precision == "float64" else 2e-5
    for a, b in zip(got, want, strict=True):
        assert np.abs(a - b).max() <= tol * np.abs(b).max(), (precision, np.abs(a - b).max(), np.abs(b).max())


def test_float32_close_to_float64():
    coord, cells, atype = supercell(2)
    e64, f64, _ = DeepPot(water_model("float64"), "cuda").eval(coord, cells, atype)
    e32, f32, _ = DeepPot(water_model("float32"), "cuda").eval(coord, cells, atype)
    assert np.abs(e32 - e64).max() / np.abs(e64).max() < 1e-5
    assert np.abs(f32 - f64).max() / np.abs(f64).max() < 1e-3


@pytest.mark.parametrize("by_type", [False, True])
@pytest.mark.parametrize(("precision", "fused", "compressed"), [
    ("float64", True, False), ("float64", False, False), ("float32", True, False), ("float32", True, True)])
def test_graphed_evaluation_equals_eager(precision, fused, compressed, by_type, monkeypatch):
    """Replays with new positions (the same list) and with other shapes (a recapture) against eager calls; the
    fused stage's fitting nets on every atom, or by_type on their own type's atoms (lists copied in)."""
    from deeppot.infer import graph as graph_module
    from deeppot.infer.graph import GraphedEvaluation

    monkeypatch.setattr(graph_module, "BY_TYPE_MIN_CENTRES", 0 if by_type else 10**9)

    model = water_model(precision)
    if compressed:  # the table kernels' rows and their lane-parallel kernels inside the graph too
        model.descriptor.enable_compression(0.5)
    ev = DeepPot(model, "cuda", fused=fused, chunk_atoms=100).evaluator  # several chunks
    graphed = GraphedEvaluation(ev, atomic=True)
    coord, cells, atype = supercell(1)
    as_t = lambda a, dt=torch.float64: torch.as_tensor(a, dtype=dt, device="cuda")  # noqa: E731
    atype_t = as_t(np.tile(atype, (2, 1)), torch.int64)
    flat = ev.neighbors(as_t(coord), atype_t, as_t(cells).reshape(2, 3, 3))
    tol = dict(rtol=1e-10, atol=1e-10) if precision == "float64" else dict(rtol=2e-5, atol=2e-5)
    for step in range(3):
        flat.ext_coord += 0.01 * torch.randn_like(flat.ext_coord) * (step > 0)
        want = ev.evaluate_neighbors(flat, atomic=True)
        got = graphed(flat)
        for key in want:
            torch.testing.assert_close(got[key], want[key], **tol)
    assert graphed.captures == 1
    one = ev.neighbors(as_t(coord[:1]), atype_t[:1], as_t(cells[:1]).reshape(1, 3, 3))
    torch.testing.assert_close(graphed(one)["force"], ev.evaluate_neighbors(one, atomic=True)["force"], **tol)
    assert graphed.captures == 2
    # one frame: fewer extended atoms (the cell list's ghosts within rcut, not 26 whole images) fill the first rows
    # of the same graph
    from deeppot.infer.evaluate import FlatNeighbors
    from deeppot.infer.neighbors import SkinNeighborList

    nd = SkinNeighborList(ev.model.rcut, ev.model.sel, 0.0).build(as_t(coord[:1]), atype_t[:1],
                                                                   as_t(cells[:1]).reshape(1, 3, 3))
    fewer = FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping)
    assert fewer.ext_coord.shape[0] < one.ext_coord.shape[0]
    want = ev.evaluate_neighbors(fewer, atomic=True)
    for key, value in graphed(fewer).items():
        torch.testing.assert_close(value, want[key], **tol)
    assert graphed.captures == 2
    assert graphed.by_type(fewer) == (by_type and fused)


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_graphed_evaluation_by_type_follows_the_types(precision, monkeypatch):
    """By type, the captured index lists take the new data's: two atoms of different types swapped within a chunk
    (the same counts in each) replay the graph; an atom of another type (other counts) captures again. All equal
    eager calls."""
    from deeppot.infer import graph as graph_module
    from deeppot.infer.graph import GraphedEvaluation

    monkeypatch.setattr(graph_module, "BY_TYPE_MIN_CENTRES", 0)
    ev = DeepPot(water_model(precision), "cuda", fused=True, chunk_atoms=100).evaluator
    graphed = GraphedEvaluation(ev)
    coord, cells, atype = supercell(1)
    tol = dict(rtol=1e-10, atol=1e-10) if precision == "float64" else dict(rtol=2e-5, atol=2e-5)
    swapped, changed = atype.copy(), atype.copy()
    swapped[[0, 90]] = atype[[90, 0]]  # both in the first chunk of 100 centres
    changed[0] = 1 - atype[0]
    assert atype[0] != atype[90]
    for types, captures in [(atype, 1), (swapped, 1), (changed, 2), (atype, 3)]:
        flat = ev.neighbors(torch.as_tensor(coord[:1], device="cuda"), torch.as_tensor(types[None], device="cuda"),
                            torch.as_tensor(cells[:1], device="cuda").reshape(1, 3, 3))
        want = ev.evaluate_neighbors(flat)
        got = graphed(flat)
        assert graphed.captures == captures
        for key in ("energy", "force", "virial", "atom_energy"):
            torch.testing.assert_close(got[key], want[key], **tol)


@pytest.mark.parametrize("compressed", [False, True])
def test_tf32_opt_in_reaches_the_fitting_gemms(compressed):
    """tf32=True runs the fitting nets' GEMMs on TF32 too: a compressed model (no embedding GEMM) differs from its
    float32 evaluation, eager and graphed, by TF32's rounding only; PyTorch's setting is left as it was."""
    from deeppot.infer.graph import GraphedEvaluation
    from deeppot.io.compress import compress_model

    model = water_model("float32")
    if compressed:
        model.min_nbor_dist.fill_(0.8)
        compress_model(model)
    coord, cells, atype = supercell(2)
    exact, tf32 = DeepPot(model, "cuda").evaluator, DeepPot(model, "cuda", tf32=True).evaluator
    as_t = lambda a, dt=torch.float64: torch.as_tensor(a, dtype=dt, device="cuda")  # noqa: E731
    flat = exact.neighbors(as_t(coord), as_t(np.tile(atype, (2, 1)), torch.int64), as_t(cells).reshape(2, 3, 3))
    want = exact.evaluate_neighbors(flat)
    for got in (tf32.evaluate_neighbors(flat), GraphedEvaluation(tf32)(flat)):
        assert torch.backends.cuda.matmul.allow_tf32 is False
        for key in ("energy", "force"):
            error = (got[key] - want[key]).abs().max() / want[key].abs().max()
            assert 0 < error < 1e-2, (key, float(error))


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_evaluating_prebuilt_data_again_needs_no_host_sync(precision):
    """The fused stages get each chunk's centres by type from the neighbour data, made once: a second evaluation
    of the same data (an MD step, a benchmark call) runs without synchronising with the host (torch's sync
    debug mode raises on any), with the same outputs to rounding. 12,288 atoms: in float32 the fused fitting
    products run too."""
    dp = DeepPot(water_model(precision), "cuda", fused=True)
    coord, cells, atype = supercell(4)
    dev = dp.evaluator.device
    flat = dp.evaluator.neighbors(torch.as_tensor(coord[:1], device=dev), torch.as_tensor(atype[None], device=dev),
                                  torch.as_tensor(cells[:1], device=dev).reshape(1, 3, 3))
    first = {k: v.clone() for k, v in dp.evaluator.evaluate_neighbors(flat).items()}
    assert len(flat.type_rows) == 1
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        again = dp.evaluator.evaluate_neighbors(flat)
        with pytest.raises(RuntimeError, match="synchroniz"):  # the stage finding the types itself: the mode sees it
            dp.evaluator.evaluate_neighbors(flat, pair_stage=dp.evaluator.pair_stage)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    for key, value in first.items():  # the scatter's atomic adds may sum in another order
        torch.testing.assert_close(again[key], value, rtol=1e-12, atol=1e-12, msg=key)


def test_a_whole_call_syncs_only_where_a_build_must():
    """An eager `DeepPot.eval` of a 12,288-atom frame from NumPy (graph=False; the default replays it from a graph
    from the second call on): the host syncs left are the list build's own (the ghost count, the bins' extent, the
    overflow flag; until run 208 also the rows' width, until run 204 the split of the candidate pairs) and the one
    copy back. Before run 198 a call made 24 (run 197's `sync_probe.py`)."""
    dp = DeepPot(water_model("float32"), "cuda", graph=False)
    coord, cells, atype = supercell(4)
    dp.eval(coord[:1], cells[:1], atype)  # compiles the kernels
    syncs = host_syncs(lambda: dp.eval(coord[:1], cells[:1], atype))
    assert 0 < len(syncs) <= 4, syncs


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("periodic", [True, False])
def test_small_calls_replay_a_graph_of_the_whole_call(precision, periodic):
    """Two frames of 192 water atoms: the first call runs eagerly, the second captures the whole call, later calls
    at new positions replay it; each gives the eager path's outputs (graph=False) to rounding (the fused scatter
    adds in any order), and a replay syncs once, for the copy out."""
    model = water_model(precision)
    coord, cells, atype = supercell(1)
    cells = cells if periodic else None
    graphed, eager = DeepPot(model, "cuda"), DeepPot(model, "cuda", graph=False)
    tol = 1e-10 if precision == "float64" else 1e-5
    assert_calls_agree(graphed, eager, coord, cells, atype, steps=4, tol=tol, atomic=True)
    assert graphed.graphed.captures == 1 and graphed.graphed.replays == 3 and eager.graphed is None
    assert len(host_syncs(lambda: graphed.eval(coord, cells, atype, atomic=True))) == 1


def test_a_1536_atom_frame_replays_a_graph_of_the_whole_call():
    """One frame of 1,536 water atoms, captured with the cell list of static sizes (from CELLS_MIN_CENTRES atoms; run
    227: faster than the walk of its 6.4e7 centre-image pairs): the eager path's outputs to rounding, every later
    call a replay with one sync."""
    model = water_model("float32")
    coord, cells, atype = supercell(2)
    coord, cells = coord[:1], cells[:1]
    graphed, eager = DeepPot(model, "cuda"), DeepPot(model, "cuda", graph=False)
    assert_calls_agree(graphed, eager, coord, cells, atype, steps=3, tol=1e-5)
    assert graphed.graphed.captures == 1 and graphed.graphed.replays == 2
    assert graphed.graphed.captured.key[0] == "cells"
    assert len(host_syncs(lambda: graphed.eval(coord, cells, atype))) == 1


@pytest.mark.parametrize("periodic", [True, False])
def test_a_mid_size_frame_replays_a_graph(periodic):
    """One frame of 12,288 water atoms: periodic, the whole call replayed (the cell list of static sizes) with one
    sync; without a box, the list built eagerly and the evaluation replayed. From the second call of the shape on,
    the eager path's outputs to rounding."""
    model = water_model("float32")
    coord, cells, atype = supercell(4)
    cells = cells[:1] if periodic else None
    graphed, eager = DeepPot(model, "cuda"), DeepPot(model, "cuda", graph=False)
    assert_calls_agree(graphed, eager, coord[:1], cells, atype, steps=3, tol=1e-5, atomic=True)
    g = graphed.graphed
    if periodic:
        assert (g.captures, g.replays, g.staged) == (1, 2, 0)
        assert len(host_syncs(lambda: graphed.eval(coord[:1], cells, atype, atomic=True))) == 1
        # a box 0.1% larger: the same graph serves it
        assert_calls_agree(graphed, eager, coord[:1] * 1.001, cells * 1.001, atype, steps=1, tol=1e-5, atomic=True)
        assert (g.captures, g.replays) == (1, 4)
    else:
        assert (g.captures, g.staged, g.stage.captures) == (0, 2, 1)


@pytest.mark.parametrize("reps", [1, 4])
def test_a_replay_follows_new_types_of_the_same_counts(reps):
    """A captured whole call (192 atoms: every image walked; 12,288: the cell list, each fitting net on its own
    type's atoms) given types swapped between an O and an H atom (the same counts: the same graph) gives the eager
    path's outputs: what a replay copies in again only when it changed (the types, the centres of each type) is
    copied in when it does."""
    model = water_model("float32")
    coord, cells, atype = supercell(reps)
    graphed, eager = DeepPot(model, "cuda"), DeepPot(model, "cuda", graph=False)
    for _ in range(2):
        graphed.eval(coord[:1], cells[:1], atype)
    swapped = atype.copy()
    swapped[[0, -1]] = atype[[-1, 0]]
    assert atype[0] != atype[-1]
    assert_calls_agree(graphed, eager, coord[:1], cells[:1], swapped, steps=2, tol=1e-5)
    assert_calls_agree(graphed, eager, coord[:1], cells[:1], atype, steps=1, tol=1e-5)
    assert graphed.graphed.captures == 1 and graphed.graphed.replays == 4


def test_a_replay_that_overflows_sel_is_repeated_eagerly_and_warned():
    from deeppot.nlist import NeighborOverflowWarning

    cfg = json.loads((WATER / "input.json").read_text())["model"]
    cfg["descriptor"]["sel"] = [10, 20]  # water has ~30 O and ~60 H neighbours within 6 Å
    torch.manual_seed(0)
    model = EnergyModel.from_config(cfg)
    coord, cells, atype = supercell(1)
    graphed, eager = DeepPot(model, "cuda"), DeepPot(model, "cuda", graph=False)
    for _ in range(3):
        with pytest.warns(NeighborOverflowWarning):
            got = graphed.eval(coord, cells, atype)
        with pytest.warns(NeighborOverflowWarning):
            want = eager.eval(coord, cells, atype)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-8)
    assert graphed.graphed.captures == 1 and graphed.graphed.replays == 0


def test_many_outputs_come_back_through_pinned_memory_into_their_own():
    from deeppot.infer.deep_pot import PINNED_MIN, host_copy

    values = torch.rand(PINNED_MIN + 7, dtype=torch.float64, device="cuda")
    first = host_copy(values)
    np.testing.assert_array_equal(first, values.cpu().numpy())
    kept = first.copy()
    values.add_(1.0)
    second = host_copy(values)  # the pinned block may be the first call's again: first must not change
    np.testing.assert_array_equal(first, kept)
    np.testing.assert_array_equal(second, values.cpu().numpy())
    assert not np.shares_memory(first, second)
