"""`DeepPot` against the model's reference path: shapes, chunking, physics and bad input (float64, CPU)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import make_model, random_system

from deeppot.infer import DeepPot, standard_input

pytestmark = pytest.mark.filterwarnings("ignore::deeppot.nlist.NeighborOverflowWarning")


def skewed(coord: torch.Tensor, box: torch.Tensor):
    """The same frames in a sheared (triclinic) cell."""
    shear = torch.tensor([[1.0, 0.0, 0.0], [0.3, 1.0, 0.0], [-0.2, 0.25, 1.0]], dtype=torch.float64)
    return coord @ shear, box @ shear


@pytest.fixture(scope="module")
def model():
    return make_model(type_one_side=False, seed=5)


@pytest.mark.parametrize("periodic", [True, False])
def test_eval_equals_reference_path(model, periodic):
    coord, atype, box = random_system(natoms=11, nframes=3, box_len=4.6, seed=2)
    coord, box = skewed(coord, box)
    box = box if periodic else None
    ref = model(coord, atype, box, do_atomic_virial=True)
    cells = None if box is None else box.numpy().reshape(3, 9)
    e, f, v, ae, av = DeepPot(model, "cpu").eval(coord.numpy(), cells, atype.numpy(), atomic=True)
    assert (e.shape, f.shape, v.shape, ae.shape, av.shape) == ((3, 1), (3, 11, 3), (3, 9), (3, 11, 1), (3, 11, 9))
    for got, key in [(e[:, 0], "energy"), (f, "force"), (v, "virial"), (ae[..., 0], "atom_energy"),
                     (av, "atom_virial")]:
        np.testing.assert_allclose(got, ref[key].numpy(), rtol=1e-12, atol=1e-12, err_msg=key)


def test_chunked_equals_unchunked(model):
    """Frames split into batches of one frame, centres into chunks of 4: the same numbers."""
    coord, atype, box = random_system(natoms=13, nframes=3, box_len=4.8, seed=6)
    args = coord.numpy(), box.numpy().reshape(3, 9), atype.numpy()
    whole = DeepPot(model, "cpu").eval(*args, atomic=True)
    parts = DeepPot(model, "cpu", batch_atoms=13, chunk_atoms=4).eval(*args, atomic=True)
    for a, b in zip(parts, whole, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)


def test_invariances_and_finite_differences(model):
    coord, atype, box = random_system(natoms=9, box_len=4.5, seed=8)
    dp = DeepPot(model, "cpu")
    x, cell, types = coord.numpy()[0], box.numpy().reshape(1, 9), atype.numpy()
    e, f, v = dp.eval(x, cell, types)
    rot = torch.linalg.qr(torch.randn(3, 3, generator=torch.Generator().manual_seed(3), dtype=torch.float64))[0]
    rot = rot.numpy()
    perm = np.random.default_rng(1).permutation(9)
    e_rot, f_rot, _ = dp.eval(x @ rot, (cell.reshape(3, 3) @ rot).reshape(1, 9), types)
    e_perm, f_perm, _ = dp.eval((x + 0.37)[perm], cell, types[perm])
    np.testing.assert_allclose([e_rot[0, 0], e_perm[0, 0]], [e[0, 0]] * 2, rtol=1e-12)
    np.testing.assert_allclose(f_rot[0], f[0] @ rot, atol=1e-11)
    np.testing.assert_allclose(f_perm[0], f[0][perm], atol=1e-11)
    h, i = 1e-5, 4
    plus, minus = x.copy(), x.copy()
    plus[i, 1] += h
    minus[i, 1] -= h
    fd = -(dp.eval(plus, cell, types)[0] - dp.eval(minus, cell, types)[0])[0, 0] / (2 * h)
    assert abs(fd - f[0, i, 1]) < 1e-7 * max(1.0, abs(f).max())
    strain = np.eye(3)
    strain[0, 2] = h
    e_s = [dp.eval(x @ s, (cell.reshape(3, 3) @ s).reshape(1, 9), types)[0][0, 0] for s in (strain, 2 * np.eye(3)
                                                                                          - strain)]
    assert abs(-(e_s[0] - e_s[1]) / (2 * h) - v[0, 2 * 3 + 0]) < 1e-7 * max(1.0, abs(v).max())


def test_type_map_and_cutoff(model):
    dp = DeepPot(model, "cpu")
    assert (dp.get_type_map(), dp.get_ntypes(), dp.get_rcut()) == (["O", "H"], 2, model.rcut)


@pytest.mark.parametrize(("change", "message"), [
    (lambda c, b, t: (c[:, :5], b, t), "do not hold"),
    (lambda c, b, t: (c, b[:, :5], t), "cells of shape"),
    (lambda c, b, t: (c, b, np.where(np.arange(t.size) == 3, 7, t)), "atom type 7 of atom 3"),
    (lambda c, b, t: (c, b, np.where(np.arange(t.size) == 2, -1, t)), "atom type -1 of atom 2"),
    (lambda c, b, t: (c, b * np.array([1, 1, 1, 1, np.inf, 1, 1, 1, 1.0]), t), "cells holds NaN or infinite"),
    (lambda c, b, t: (np.where(np.arange(c.size).reshape(c.shape) == 10, np.nan, c), b, t), "NaN"),
    (lambda c, b, t: (c, b * np.array([1, 1, 1, 1, 1, 1, 0, 0, 0.0]), t), "zero volume"),
    (lambda c, b, t: (c, b, t.astype(float)), "must be integers"),
])
def test_bad_input_is_named(model, change, message):
    coord, atype, box = random_system(natoms=6, seed=1)
    args = change(coord.numpy(), box.numpy().reshape(1, 9), atype.numpy())
    with pytest.raises(ValueError, match=message):
        DeepPot(model, "cpu").eval(*args)


@pytest.mark.parametrize("where", [(0, 5), (2, 29_999)])
def test_bad_values_are_named_in_large_inputs_too(where):
    """From PARALLEL_MIN values the checks take other reductions (PyTorch's; the sum for finiteness)."""
    from deeppot.infer.deep_pot import PARALLEL_MIN

    nf, natoms = 3, 30_000
    assert nf * natoms >= PARALLEL_MIN
    rng = np.random.default_rng(0)
    coord, atype, box = rng.random((nf, natoms, 3)) * 40, rng.integers(0, 2, (nf, natoms)), np.eye(3) * 40
    cells = np.tile(box.reshape(1, 9), (nf, 1))
    f, i = where
    for value in (np.nan, -np.inf):
        bad = coord.copy()
        bad[f, i, 1] = value
        with pytest.raises(ValueError, match=f"coords holds NaN or infinite values \\(atom {i} of frame {f};"):
            standard_input(bad, cells, atype, 2, mixed_type=True)
    types = atype.copy()
    types[f, i] = 2
    with pytest.raises(ValueError, match=f"atom type 2 of atom {i} \\(frame {f}\\)"):
        standard_input(coord, cells, types, 2, mixed_type=True)
    huge = np.full((nf, natoms, 3), 1e305)  # finite, though their sum overflows
    assert standard_input(huge, cells, atype, 2, mixed_type=True)[0] is not None


def test_large_inputs_of_any_layout_and_integer_type_are_checked():
    """Arrays PyTorch cannot view (negative strides) or reduce (uint32 types) take NumPy's checks."""
    from deeppot.infer.deep_pot import PARALLEL_MIN

    natoms = PARALLEL_MIN + 5
    coord = np.random.default_rng(0).random((1, natoms, 3))[:, ::-1] * 40
    coord[0, 7, 2] = np.nan
    with pytest.raises(ValueError, match="atom 7 of frame 0"):
        standard_input(coord, np.eye(3).reshape(1, 9) * 40, np.zeros(natoms, dtype=np.uint32), 2)
    types = np.zeros(natoms, dtype=np.int64)
    types[9] = 5
    with pytest.raises(ValueError, match=f"atom type 5 of atom {natoms - 10} "):
        standard_input(np.nan_to_num(coord), None, types[::-1], 2)
    out = standard_input(np.nan_to_num(coord), None, np.zeros(2 * natoms, dtype=np.int64)[::-2], 2)
    assert out[1].dtype == np.int64 and out[1].shape == (1, natoms)


def test_unsupported_arguments_are_refused(model):
    coord, atype, box = random_system(natoms=6, seed=1)
    with pytest.raises(ValueError, match="fparam"):
        DeepPot(model, "cpu").eval(coord.numpy(), box.numpy(), atype.numpy(), fparam=np.zeros(1))
    with pytest.raises(ValueError, match="unsupported arguments"):
        DeepPot(model, "cpu").eval(coord.numpy(), box.numpy(), atype.numpy(), atomics=True)


def test_graphed_evaluation_needs_cuda():
    from deeppot.infer import Evaluator
    from deeppot.infer.graph import GraphedEvaluation

    with pytest.raises(ValueError, match="CUDA"):
        GraphedEvaluation(Evaluator(make_model(), "cpu"))


def test_tf32_is_set_only_within_an_evaluation(model):
    """The tf32 opt-in turns on PyTorch's TF32 GEMM setting for the evaluator's calls alone (restored after, also
    after an error) and is a no-op on a CPU, where there are no tensor cores."""
    assert DeepPot(model, "cpu", tf32=True).evaluator.tf32 is False
    ev = DeepPot(model, "cpu").evaluator
    ev.tf32 = True  # as on a GPU
    with ev.gemm_precision():
        assert torch.backends.cuda.matmul.allow_tf32 is True
    assert torch.backends.cuda.matmul.allow_tf32 is False
    with pytest.raises(RuntimeError), ev.gemm_precision():
        raise RuntimeError("a failed evaluation")
    assert torch.backends.cuda.matmul.allow_tf32 is False


def inverse_of(box):
    """The boxes' inverses, as `GraphedCall` gives its graphs (made on the host), or None."""
    return None if box is None else torch.linalg.inv_ex(box).inverse


@pytest.mark.parametrize("per_slot", [False, True])
@pytest.mark.parametrize("periodic", [True, False])
def test_the_graphed_call_is_the_eager_call(model, periodic, per_slot):
    """What `GraphedCall` captures, run eagerly here (the graph itself needs CUDA: tests/gpu/test_infer.py):
    `DeepPot.eval`'s outputs flattened, and no overflow, for triclinic and non-periodic frames with a virtual
    atom, per-atom outputs included; its list in index order, or sorted for a model whose statistics differ slot
    by slot."""
    from deeppot.infer import Evaluator
    from deeppot.infer.deep_pot import OUTPUT_KEYS
    from deeppot.infer.graph import GraphedCall
    from deeppot.nlist.ghosts import image_shifts, nbuff_for

    coord, atype, box = random_system(natoms=11, nframes=3, box_len=4.6, seed=2)
    coord, box = skewed(coord, box)
    box = box if periodic else None
    atype = atype.expand(3, -1).clone()
    atype[1, 4] = -1
    if per_slot:
        model = make_model(type_one_side=False, seed=5)
        with torch.no_grad():
            model.descriptor.davg.add_(0.05 * torch.rand_like(model.descriptor.davg))
    graphed = GraphedCall(Evaluator(model, "cpu"))
    assert graphed.evaluator.sorted_lists == per_slot
    key = graphed.key(coord, box, True)
    assert key[:3] == ("whole", 3, 11) and key[4] is True
    shifts = None if box is None else image_shifts(nbuff_for(box, model.rcut))
    got = graphed._call(coord, atype, box, inverse_of(box), shifts=shifts, atomic=True)
    out = graphed.evaluator.evaluate(coord, atype, box, atomic=True)
    want = torch.cat([out[k].reshape(-1) for k in OUTPUT_KEYS])
    assert got[-1] == 0  # no overflow
    torch.testing.assert_close(got[:-1], want, rtol=1e-12, atol=1e-12)
    small = GraphedCall(Evaluator(make_model(type_one_side=False, seed=5, sel=(2, 2)), "cpu"))
    assert small._call(coord, atype, box, inverse_of(box), shifts=shifts, atomic=False)[-1] == 1  # sel 2: flagged
    assert graphed.key(coord[:1].expand(400, -1, -1), None, False) is None  # 4,400 centres in 400 frames


def test_graphed_calls_are_bounded_by_centres_and_pairs(model):
    """`GraphedCall` serves fewer than GRAPH_MAX_CENTRES centres and at most GRAPH_MAX_PAIRS (centre, image) pairs,
    or for a model that needs DeePMD's sorted list (which stores every pair) the reference's pair limit."""
    from deeppot.infer import Evaluator
    from deeppot.infer.graph import GRAPH_MAX_CENTRES, GRAPH_MAX_PAIRS, GraphedCall
    from deeppot.nlist import REFERENCE_MAX_PAIRS, reference_pairs

    natoms = 300
    box = torch.eye(3, dtype=torch.float64)[None] * (model.rcut / 2.5)  # three image layers each way
    coord = torch.rand(1, natoms, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) @ box
    pairs = reference_pairs(coord, box, model.rcut)
    assert REFERENCE_MAX_PAIRS["cuda"] < pairs <= GRAPH_MAX_PAIRS
    sorted_model = make_model(type_one_side=False, seed=5)
    with torch.no_grad():
        sorted_model.descriptor.davg.add_(0.05 * torch.rand_like(sorted_model.descriptor.davg))
    assert GraphedCall(Evaluator(model, "cpu")).key(coord, box, False)[0] == "whole"
    assert GraphedCall(Evaluator(sorted_model, "cpu")).key(coord, box, False)[0] == "stage"  # one frame: its stage
    assert GraphedCall(Evaluator(sorted_model, "cpu")).key(coord.expand(2, -1, -1), box.expand(2, -1, -1),
                                                             False) is None
    many = coord.expand(GRAPH_MAX_CENTRES // natoms + 1, -1, -1)
    assert GraphedCall(Evaluator(model, "cpu")).key(many, None, False) is None


def test_one_periodic_frame_from_cells_min_centres_takes_the_cell_list(model):
    """A periodic frame of CELLS_MIN_CENTRES atoms or more is captured with the cell list ("cells"), one below it
    with the walk of every image ("whole"), as are several frames of it and a frame without a box."""
    from deeppot.infer import Evaluator
    from deeppot.infer.graph import CELLS_MIN_CENTRES, GraphedCall

    graphed = GraphedCall(Evaluator(model, "cpu"))
    for natoms, want in [(CELLS_MIN_CENTRES - 1, "whole"), (CELLS_MIN_CENTRES, "cells")]:
        box = torch.eye(3, dtype=torch.float64)[None] * (natoms / 0.1) ** (1 / 3)  # water's density
        coord = torch.rand(1, natoms, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) @ box
        assert graphed.key(coord, box, False)[0] == want
        assert graphed.key(coord.expand(2, -1, -1), box.expand(2, -1, -1), False)[0] == "whole"
        assert graphed.key(coord, None, False)[0] == "whole"


def test_the_graphed_call_with_a_static_cell_list_is_the_eager_call(model):
    """What `GraphedCall` captures for a periodic mid-size frame ("cells": the cell list of static sizes), run
    eagerly on a triclinic frame with a virtual atom: `DeepPot.eval`'s outputs flattened and no flag; with too few
    ghost slots the flag says so (2)."""
    from deeppot.infer import Evaluator
    from deeppot.infer.deep_pot import OUTPUT_KEYS
    from deeppot.infer.graph import GraphedCall
    from deeppot.infer.static_cells import ghost_count, plan_cells
    from deeppot.nlist.cell_list import ghost_reach

    coord, atype, box = random_system(natoms=30, nframes=1, box_len=7.0, seed=4)
    coord, box = skewed(coord, box)
    atype = atype.reshape(1, -1).clone()
    atype[0, 3] = -1
    graphed = GraphedCall(Evaluator(model, "cpu"))
    plan = plan_cells(box[0], 30, model.rcut, coord.dtype)[0]
    reach = ghost_reach(box[0], model.rcut, coord.dtype)[0]
    nghost = ghost_count(coord, box, reach, plan)
    inverse = inverse_of(box)
    got = graphed._cell_call(coord, atype, box, inverse, reach, plan=plan, capacity=nghost + 5, atomic=True)
    out = graphed.evaluator.evaluate(coord, atype, box, atomic=True)
    assert got[-1] == 0
    torch.testing.assert_close(got[:-1], torch.cat([out[k].reshape(-1) for k in OUTPUT_KEYS]), rtol=1e-12, atol=1e-12)
    assert graphed._cell_call(coord, atype, box, inverse, reach, plan=plan, capacity=nghost - 1, atomic=False)[-1] == 2


def test_a_whole_calls_type_rows_from_the_host_are_the_evaluators(model):
    """`GraphedCall._host_rows` (what a by-type whole call copies in) equal `FlatNeighbors.find_type_rows`'s lists,
    chunk by chunk, virtual atoms counted as type 0 centres."""
    from deeppot.infer import Evaluator
    from deeppot.infer.evaluate import FlatNeighbors
    from deeppot.infer.graph import GraphedCall

    atype = torch.randint(0, 2, (1, 50), generator=torch.Generator().manual_seed(1))
    atype[0, [3, 17]] = -1
    graphed = GraphedCall(Evaluator(model, "cpu", chunk_atoms=16))
    rows = graphed._host_rows(atype)
    flat = FlatNeighbors(torch.zeros(50, 3), atype[0], torch.zeros(50, 1, dtype=torch.int64), torch.arange(50),
                         atype[0].clamp(min=0), 1, 50)
    flat.find_type_rows(atype.reshape(-1), 16, 2)
    want = [r for key in sorted(flat.type_rows) for r in flat.type_rows[key]]
    assert len(rows) == len(want) == 8
    for got, ref in zip(rows, want, strict=True):
        assert torch.equal(got, ref.cpu())


def test_what_a_replay_keeps_is_made_again_when_its_source_changes(model):
    """`GraphedCall` keeps what it makes for a call from the host's types and box (the centres of each type, the
    boxes' inverses, the cell plan and slab reach) and gives the same objects while they are equal: a replay copies
    those in only when it gets new objects (`_CallGraph.copy_in`). So equal types or boxes, even in new arrays,
    give the kept objects; changed ones, even changed in place, give new ones with the new values."""
    from deeppot.infer import Evaluator
    from deeppot.infer.graph import GraphedCall

    graphed = GraphedCall(Evaluator(model, "cpu"))
    atype = torch.tensor([[0, 1, 1, 0, 1, 1]])
    types, rows = graphed._kept_types(atype), graphed._host_rows(atype)
    assert graphed._kept_types(atype.clone()) is types and graphed._host_rows(atype.clone()) is rows
    atype[0, [0, 1]] = atype[0, [1, 0]]  # in place: the kept copy is the host's own
    swapped = graphed._host_rows(atype)
    assert graphed._kept_types(atype) is not types and torch.equal(graphed._kept_types(atype), atype)
    assert swapped is not rows and [r.tolist() for r in swapped] == [[1, 3], [0, 2, 4, 5]]

    def inverse_and_plan(box, natoms=500):
        kept = graphed._kept_box(box)
        return kept.inverse, graphed._plan(kept, natoms, torch.float64)

    box = torch.tensor([[[9.0, 0.0, 0.0], [1.0, 8.0, 0.0], [0.5, -1.0, 10.0]]], dtype=torch.float64)
    inverse, plan = inverse_and_plan(box)
    again = inverse_and_plan(box.clone())
    assert again[0] is inverse and again[1] is plan
    torch.testing.assert_close(inverse @ box, torch.eye(3, dtype=torch.float64)[None])
    box[0, 0, 0] = 9.5
    grown, grown_plan = inverse_and_plan(box)
    assert grown is not inverse and grown_plan is not plan
    torch.testing.assert_close(grown @ box, torch.eye(3, dtype=torch.float64)[None])
    assert inverse_and_plan(box, 600)[1] is not grown_plan  # another atom count: another plan


def test_mid_size_frames_replay_their_evaluation_stage(model):
    """One frame of GRAPH_MAX_CENTRES to STAGE_MAX_CENTRES atoms: its evaluation stage ("stage", atoms, atomic);
    more atoms, or several frames of them: no graph."""
    from deeppot.infer import Evaluator
    from deeppot.infer.graph import GRAPH_MAX_CENTRES, STAGE_MAX_CENTRES, GraphedCall

    graphed = GraphedCall(Evaluator(model, "cpu"))
    for natoms, nf, want in [(GRAPH_MAX_CENTRES, 1, ("stage", GRAPH_MAX_CENTRES, True)),
                             (STAGE_MAX_CENTRES, 1, ("stage", STAGE_MAX_CENTRES, True)),
                             (STAGE_MAX_CENTRES + 1, 1, None), (GRAPH_MAX_CENTRES, 2, None)]:
        coord = torch.rand(nf, natoms, 3, dtype=torch.float64) * 50.0
        assert graphed.key(coord, None, True) == want
