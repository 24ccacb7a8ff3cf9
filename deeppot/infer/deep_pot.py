"""`DeepPot`: DeePMD-kit's `deepmd.infer.DeepPot` in its common use, NumPy in and out, on the fast path.

    dp = DeepPot("model.dp")                      # any model file deeppot reads; a GPU when there is one
    e, f, v = dp.eval(coords, cells, atom_types)  # (nf, 1), (nf, natoms, 3), (nf, 9)
    e, f, v, ae, av = dp.eval(coords, cells, atom_types, atomic=True)   # + (nf, natoms, 1), (nf, natoms, 9)

`Evaluator` is the tensor-level engine under it (also used by `deeppot test` and the ASE calculator): it splits the
frames into batches of about `batch_atoms` atoms, builds their neighbour lists (the O(N^2) reference for small
cells, the cell list for large ones: `deeppot.infer.candidates.evaluation_neighbors`) and evaluates each batch in
chunks of centres (`deeppot.infer.evaluate`), so memory stays linear in the atom count and no system is too large.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from deeppot.infer.candidates import evaluation_neighbors
from deeppot.infer.evaluate import FlatNeighbors, PairStage, evaluate_flat, reference_pair_data, reference_pair_stage
from deeppot.infer.order import kept_order
from deeppot.model import EnergyModel
from deeppot.model.slots import interchangeable_slots
from deeppot.model.summary import model_size, observed_types
from deeppot.nlist import REFERENCE_MAX_PAIRS, reference_pairs

log = logging.getLogger(__name__)

OUTPUT_KEYS = ("energy", "force", "virial", "atom_energy", "atom_virial")
# `eval_descriptor`'s batches: whole frames of about this many atoms. Its reference path without autograd keeps
# about two embedding layers' outputs at once (~0.2 MB an atom for float64 water), so ~0.5 GB a batch.
DESCRIPTOR_BATCH_ATOMS = 2048
DTYPES = {torch.float32: np.float32, torch.float64: np.float64}


def packed_outputs(out: dict[str, Tensor], atomic: bool) -> Tensor:
    """`DeepPot.eval`'s outputs of `Evaluator.evaluate` flattened into one float64 tensor (OUTPUT_KEYS order, the
    per-atom ones if `atomic`): one copy back to the host, where each copy is a sync."""
    return torch.cat([out[key].reshape(-1) for key in (OUTPUT_KEYS if atomic else OUTPUT_KEYS[:3])])


# From this many centres the fused stages take prebuilt neighbour data in the order of their neighbour counts
# (`deeppot.infer.order`, `Evaluator.evaluate_neighbors`).
ORDER_MIN_CENTRES = 4096
# From this many values a GPU's outputs come back through pinned memory (on an H100's host, 295k float64: 159 us
# against 290 us for a copy into pageable memory; 37k: the same; 600: pageable 20 us against 31, run 230).
PINNED_MIN = 1 << 16


def host_copy(values: Tensor) -> np.ndarray:
    """values as a NumPy array of their own memory; many values from a GPU through pinned memory (PyTorch caches its
    blocks) and PyTorch's copy out of it, on every core (with NumPy's one-core copy out, 334 us in all for 295k
    float64, run 230)."""
    if not values.is_cuda or values.numel() < PINNED_MIN:
        return values.cpu().numpy()
    pinned = torch.empty(values.shape, dtype=values.dtype, pin_memory=True)
    pinned.copy_(values, non_blocking=True)
    torch.cuda.current_stream(values.device).synchronize()
    return pinned.clone().numpy()


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def memory_budget(device: torch.device) -> int:
    """Bytes one chunk of centres may use: 40% of the free GPU memory (at most 8 GiB), 1 GiB on a CPU."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(min(0.4 * free, 8 * 2**30))
    return 2**30


def bytes_per_centre(model: EnergyModel, fused: bool) -> int:
    """A generous estimate of one centre's transient memory in a chunk (measured peaks sit below it)."""
    d, fit = model.descriptor, model.fitting
    nnei, m1, item = sum(d.sel), d.neuron[-1], d.dtype.itemsize
    # copies of the descriptor (D, dE/dD and the fitting's work on them) and of the fitting activations; the fused
    # stage keeps fewer: its peaks were about a third of the estimate with 8 (98,304 water atoms in one chunk: 2.7
    # GiB with the list, run 248), and its chunks of ~105,000 atoms cut 108,000-atom systems in two (run 249)
    copies = 4 if fused else 8
    per_atom = item * (copies * m1 * d.axis_neuron + 8 * sum(fit.neuron))
    # fused: the compressed kernels' rows (8 values a slot) fit in the margin (98,304 water atoms: 2.8 GB measured);
    # counting them split that system into chunks of ~96,000 and ~2,000 atoms on an 8 GiB budget, 11.9-12.7 ms a
    # call instead of 8.8 (runs 160-161)
    per_pair = 48 + 8 * item if fused else 48 + (8 * m1 + 16) * item  # reference: G, dG/ds and their products
    if d.compressed and not fused:  # the reference table lookup also gathers 6 coefficients per output
        per_pair += 6 * m1 * item
    return per_atom + nnei * per_pair


class Evaluator:
    """Energy, forces and virials of frames on one device, batched by frames and chunked by atoms.

    fused: None picks the fused Triton kernels where they can run (a GPU and a model of the supported shape,
    `deeppot.kernels.descriptor.unfusable_reason`; for a compressed model the table kernels of
    `deeppot.kernels.compressed`), True insists (ValueError where they cannot), False keeps PyTorch.
    tf32: the mixed-precision opt-in on a GPU: one TF32 pass per float32 GEMM, in the fused embedding kernels
    (instead of three) and in the fitting nets' cuBLAS GEMMs (instead of float32 arithmetic); about 1e-3 relative
    error in each. A compressed model has no embedding GEMM; its fitting nets take the opt-in.
    products: without tf32, the float32-accurate scheme of the fused kernels' products, "f16x3" or "tf32x3"
    (`deeppot.kernels.precision`); None picks f16x3 where the model's values fit float16's range on a GPU where
    it was measured.
    """

    def __init__(self, model: EnergyModel, device: torch.device | str | None = None, fused: bool | None = None,
                 batch_atoms: int | None = None, chunk_atoms: int | None = None, tf32: bool = False,
                 products: str | None = None) -> None:
        self.device = torch.device(device) if device is not None else default_device()
        self.model = model.to(self.device).eval()
        self.pair_stage, self.fused = self._pick_stage(fused)
        self.scatter = None  # forces and virials: the PyTorch twin, or with the fused stages the fused kernel
        self.pairs = reference_pair_data  # a chunk's pair data, likewise
        self.stage_scatters = self.fused  # the fused stages add the forces themselves (`evaluate_flat`)
        if self.fused:
            from deeppot.kernels.pairs import pair_data
            from deeppot.kernels.scatter import scatter_forces_and_virial as scatter

            self.scatter, self.pairs = scatter, pair_data
        self.products = self._pick_products(tf32, products)
        if self.fused:
            self.pair_stage = functools.partial(self.pair_stage, precision=self.products)
        self.tf32 = tf32 and self.device.type == "cuda"
        d = self.model.descriptor  # lists in candidate order where that is exact (`evaluation_neighbors`)
        self.sorted_lists = not interchangeable_slots(d.davg, d.dstd, list(d.sel))
        self.batch_atoms = batch_atoms or (2**20 if self.device.type == "cuda" else 2**14)
        self.chunk_atoms = chunk_atoms or max(1, memory_budget(self.device) // bytes_per_centre(model, self.fused))
        log.debug("evaluation on %s with the %s pair stage, %d centres a chunk", self.device,
                 "fused Triton" if self.fused else "PyTorch", self.chunk_atoms)

    def _pick_products(self, tf32: bool, products: str | None) -> str:
        """The fused kernels' precision of float32 products: "tf32" (opted in; a compressed model's tables have no
        GEMM, its fitting nets take cuBLAS's TF32 products), else f16x3 or tf32x3."""
        if tf32:
            return "tf32"
        if products not in (None, "f16x3", "tf32x3"):
            raise ValueError(f"products must be 'f16x3' or 'tf32x3', not {products!r}")
        if products is None and self.fused:
            from deeppot.kernels.precision import float32_products

            return float32_products(self.model, self.device)
        return products or "tf32x3"

    def _pick_stage(self, fused: bool | None) -> tuple[PairStage, bool]:
        if fused is False:
            return reference_pair_stage, False
        if self.model.descriptor.compressed:
            from deeppot.kernels.compressed import compressed_pair_stage as stage
            from deeppot.kernels.compressed import unfusable_reason
        else:
            from deeppot.kernels.descriptor import fused_pair_stage as stage
            from deeppot.kernels.descriptor import unfusable_reason
        reason = unfusable_reason(self.model, self.device)
        if reason is None:
            return stage, True
        if fused:
            raise ValueError(f"the fused inference kernels cannot run: {reason}")
        log.debug("fused inference kernels not used: %s", reason)
        return reference_pair_stage, False

    def evaluate(self, coord: Tensor, atype: Tensor, box: Tensor | None, atomic: bool = False) -> dict[str, Tensor]:
        """coord (nf, nloc, 3), atype (nf, nloc) int64 model types, box (nf, 3, 3) or None, on this device or on
        the host (as `DeepPot.eval` passes them). From the host each batch is copied without waiting for the
        GPU's queue, and what the call plans from the inputs (the frame batches, the builder, the centres of each
        type) is read there without a host sync.

        Returns float64 energy (nf,), force (nf, nloc, 3), virial (nf, 9), atom_energy (nf, nloc)
        [, atom_virial (nf, nloc, 9)], on this device.
        """
        outs = [self._evaluate_batch(coord[part], atype[part], None if box is None else box[part], atomic)
                for part in self.frame_batches(coord, box)]
        return {key: torch.cat([o[key] for o in outs]) for key in outs[0]}

    def frame_batches(self, coord: Tensor, box: Tensor | None) -> list[slice]:
        """Frames per batch: about batch_atoms atoms, and on a GPU few enough that the O(N^2) builder stays under
        its pair limit when it is the one chosen (small cells)."""
        nf, nloc = coord.shape[:2]
        per_batch = max(1, self.batch_atoms // max(nloc, 1))
        if self.device.type == "cuda":
            pairs = reference_pairs(coord[:1], None if box is None else box[:1], self.model.rcut)
            if pairs <= REFERENCE_MAX_PAIRS["cuda"]:
                per_batch = min(per_batch, REFERENCE_MAX_PAIRS["cuda"] // pairs)
        return [slice(s, s + per_batch) for s in range(0, nf, per_batch)]

    def _evaluate_batch(self, coord: Tensor, atype: Tensor, box: Tensor | None, atomic: bool) -> dict[str, Tensor]:
        host = coord.device.type == "cpu"
        flat = self.host_neighbors(coord, atype, box) if host else self.neighbors(coord, atype, box)
        return self.evaluate_neighbors(flat, atomic, ordered=False)  # a list of its own: no order pays

    def host_neighbors(self, coord: Tensor, atype: Tensor, box: Tensor | None, sort: bool | None = None
                       ) -> FlatNeighbors:
        """`neighbors` of frames given on the host (CPU tensors): copied to this device without waiting for its
        queue (from pageable memory the copy is staged at once), the builder chosen from the host's box and the
        centres of each type of this evaluator's chunks found from the host's types, without a host sync for
        either. sort as in `neighbors`."""
        to = functools.partial(torch.Tensor.to, device=self.device, non_blocking=True)
        flat = self.neighbors(to(coord), to(atype), None if box is None else to(box), host_box=box, sort=sort)
        if self.fused and self.model.descriptor.ntypes > 1:
            flat.find_type_rows(atype.reshape(-1), self.chunk_atoms, self.model.descriptor.ntypes)
        return flat

    def neighbors(self, coord: Tensor, atype: Tensor, box: Tensor | None, host_box: Tensor | None = None,
                  sort: bool | None = None) -> FlatNeighbors:
        """Neighbour data of frames (coord (nf, nloc, 3), atype (nf, nloc), box (nf, 3, 3) or None) with this
        model's rcut and sel, as one flat list of centres (`deeppot.infer.candidates.evaluation_neighbors`: large
        systems get each block in candidate order). Models of equal rcut and sel can share it (sort: DeePMD's
        sorted list, which any model can take; None: where this model needs it). host_box: the box on the host,
        if the caller has it."""
        sort = self.sorted_lists if sort is None else sort
        with torch.no_grad():
            nd = evaluation_neighbors(coord, atype, box, self.model.rcut, self.model.sel, host_box, sort)
        return FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping)

    def evaluate_neighbors(self, flat: FlatNeighbors, atomic: bool = False,
                           pair_stage: PairStage | None = None, ordered: bool = True) -> dict[str, Tensor]:
        """The outputs of `evaluate` from prebuilt neighbour data; pair_stage: a variant of this evaluator's (the
        sync-free one that a CUDA graph captures). The fused stages get each chunk's centres by type from `flat`,
        which keeps them: evaluating the same data again (or an MD run's, which shares them) syncs for them no more
        (run 180: ntypes syncs a call left the GPU idle for ~0.5 ms of a 13.8 ms water call). On many centres and
        if ordered, they take them in the order of their neighbour counts (`deeppot.infer.order`), kept by flat
        likewise: worth it where the data is evaluated again (MD steps between builds; run 258, water: 10.82 ->
        10.56 ms a call, made anew each call 11.37), so not in `evaluate`'s calls nor in a CUDA graph's capture."""
        order, stage = None, pair_stage or self.pair_stage
        if self.fused and pair_stage is None and ordered and flat.ncentre >= ORDER_MIN_CENTRES:
            d = self.model.descriptor
            order = kept_order(flat, list(d.sel), d.ntypes, self.chunk_atoms)
            if (tile := self._gradient_tile(order)) is not None:
                stage = functools.partial(stage, grad_tile=tile)
        with torch.no_grad(), self.gemm_precision():
            return evaluate_flat(self.model, flat, self.chunk_atoms, stage, atomic, self.scatter, self.pairs,
                                 by_type=self.fused and pair_stage is None, stage_scatters=self.stage_scatters,
                                 order=order)

    def _gradient_tile(self, order) -> tuple | None:
        """The atom-tile gradient kernel's tile for the centres of `order` where not the default
        (`atom_tiles.gradient_tile`, asked once an order); None for compressed models (their own kernels)."""
        d = self.model.descriptor
        if d.compressed:
            return None
        if "grad" not in order.tiles:
            from deeppot.kernels import atom_tiles

            order.tiles["grad"] = atom_tiles.gradient_tile(d, order.counts, order.center_type, self.products, d.dtype)
        return order.tiles["grad"]

    @contextlib.contextmanager
    def gemm_precision(self) -> Iterator[None]:
        """Within: cuBLAS's float32 GEMMs (the fitting nets') on TF32 tensor cores if this evaluator takes the
        opt-in (a CUDA graph captured within keeps them); PyTorch's process-wide setting is restored after."""
        if not self.tf32:  # the process's setting stays untouched
            yield
            return
        before = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32 = before


class DeepPot:
    """A Deep Potential for evaluation, like `deepmd.infer.DeepPot`.

    model: a model file (.dp, .yaml, a deeppot or DeePMD-kit .pt checkpoint) or an `EnergyModel` (which is moved
    to the device and put in eval mode, as `nn.Module.to` does).
    device: "cpu", "cuda", "cuda:N"; None picks a GPU when there is one.
    graph: on a GPU, replay calls from a CUDA graph, captured when two calls in a row have its shape
    (`deeppot.infer.graph.GraphedCall`): whole calls (the list build, the evaluation and the outputs in one launch)
    on small systems (under 4,096 atoms a call) and on one periodic frame of up to 131,072 atoms; on one frame
    without a box of up to 32,768 atoms, the evaluation after the list build. Other keywords go to `Evaluator`.
    """

    def __init__(self, model: str | Path | EnergyModel, device: str | torch.device | None = None,
                 graph: bool = True, **kwargs) -> None:
        if not isinstance(model, EnergyModel):
            from deeppot.io import load_model

            model = load_model(model)
        self.evaluator = Evaluator(model, device, **kwargs)
        self.graphed = None
        if graph and self.evaluator.device.type == "cuda":
            from deeppot.infer.graph import GraphedCall  # deferred: the graph module builds on this one

            self.graphed = GraphedCall(self.evaluator)

    @property
    def model(self) -> EnergyModel:
        return self.evaluator.model

    def get_type_map(self) -> list[str]:
        return list(self.model.type_map)

    def get_ntypes(self) -> int:
        return len(self.model.type_map)

    def get_rcut(self) -> float:
        return float(self.model.rcut)

    def get_dim_fparam(self) -> int:
        return 0

    def get_dim_aparam(self) -> int:
        return 0

    # DeePMD-kit's other queries, for code written against `deepmd.infer.DeepPot` (an se_e2_a energy model has no
    # spin, field, Hessian or parameters; every type contributes to the energy)
    def get_sel_type(self) -> list[int]:
        return list(range(self.get_ntypes()))

    def get_ntypes_spin(self) -> int:
        return 0

    def has_default_fparam(self) -> bool:
        return False

    @property
    def has_efield(self) -> bool:
        return False

    @property
    def has_spin(self) -> bool:
        return False

    @property
    def has_hessian(self) -> bool:
        return False

    @property
    def use_spin(self) -> list[bool]:
        return []

    def get_model(self) -> EnergyModel:
        return self.model

    def get_model_def_script(self) -> dict:
        """The model section the model was built from (a copy)."""
        return copy.deepcopy(self.model.config or {})

    def get_model_size(self) -> dict[str, int]:
        return model_size(self.model)

    def get_observed_types(self) -> dict:
        return observed_types(self.model)

    def close(self) -> None:
        """Let go of the CUDA graphs (and their memory); later calls run eagerly."""
        self.graphed = None

    def eval(self, coords, cells, atom_types, atomic: bool = False, fparam=None, aparam=None,
             mixed_type: bool = False, **kwargs) -> tuple[np.ndarray, ...]:
        """Energy (nf, 1), force (nf, natoms, 3), virial (nf, 9) [, atom energy (nf, natoms, 1),
        atom virial (nf, natoms, 9) when `atomic`], float64 NumPy arrays in eV, eV/Å and eV.

        coords (nf, natoms, 3) or (nf, natoms * 3) Å; cells (nf, 9) or (nf, 3, 3) row vectors, or None without
        periodic boundaries; atom_types (natoms,) indices into `get_type_map()`, or (nf, natoms) when mixed_type.
        """
        coord, atype, box = self._checked_input("eval", coords, cells, atom_types, fparam, aparam, mixed_type, kwargs)
        inputs = torch.from_numpy(coord), torch.from_numpy(atype), None if box is None else torch.from_numpy(box)
        values = None if self.graphed is None else self.graphed(*inputs, atomic)
        if values is None:
            values = host_copy(packed_outputs(self.evaluator.evaluate(*inputs, atomic), atomic))
        nf, natoms = atype.shape
        keys = OUTPUT_KEYS if atomic else OUTPUT_KEYS[:3]  # NumPy views of the parts of the one copy
        shapes = {"energy": (nf, 1), "force": (nf, natoms, 3), "virial": (nf, 9), "atom_energy": (nf, natoms, 1),
                  "atom_virial": (nf, natoms, 9)}
        parts = np.split(values, np.cumsum([math.prod(shapes[key]) for key in keys])[:-1])
        return tuple(part.reshape(shapes[key]) for key, part in zip(keys, parts, strict=True))

    def eval_descriptor(self, coords, cells, atom_types, fparam=None, aparam=None, mixed_type: bool = False,
                        dtype: str = "native", **kwargs) -> np.ndarray:
        """The descriptor (nf, natoms, M1*M2) of each atom, the fitting net's input, as DeePMD-kit's
        `eval_descriptor`; inputs as `eval`'s. dtype: "native" (the model's precision), "fp32" or "fp64".

        Plain PyTorch (the reference path), in batches of whole frames of about DESCRIPTOR_BATCH_ATOMS atoms.
        """
        out = self._out_dtype(dtype)
        checked = self._checked_input("eval_descriptor", coords, cells, atom_types, fparam, aparam, mixed_type, kwargs)
        return self._descriptors(*checked).astype(out, copy=False)

    def eval_fitting_last_layer(self, coords, cells, atom_types, fparam=None, aparam=None, mixed_type: bool = False,
                                **kwargs) -> np.ndarray:
        """Each atom's output of its fitting net's last hidden layer, (nf, natoms, neuron[-1]) float64, as
        DeePMD-kit's `eval_fitting_last_layer`; inputs as `eval`'s (the reference path, as `eval_descriptor`)."""
        checked = self._checked_input("eval_fitting_last_layer", coords, cells, atom_types, fparam, aparam,
                                      mixed_type, kwargs)
        return self._last_hidden(self._descriptors(*checked), checked[1])

    def eval_embedding(self, coords, cells, atom_types, fparam=None, aparam=None, mixed_type: bool = False,
                       dtype: str = "fp32", **kwargs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """DeePMD-kit 3.2's `eval_embedding`: the descriptor (nf, natoms, M1*M2), the atomic feature (the last
        hidden fitting layer, (nf, natoms, neuron[-1])) and the structural feature (its sum over the atoms,
        (nf, neuron[-1])); dtype "fp32" (the default), "fp64" or "native" (the model's precision)."""
        out = self._out_dtype(dtype)
        checked = self._checked_input("eval_embedding", coords, cells, atom_types, fparam, aparam, mixed_type, kwargs)
        desc = self._descriptors(*checked)
        hidden = self._last_hidden(desc, checked[1])
        return desc.astype(out), hidden.astype(out), hidden.sum(axis=1).astype(out)

    def _checked_input(self, name: str, coords, cells, atom_types, fparam, aparam, mixed_type: bool,
                       kwargs: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """`standard_input`'s arrays, after refusing the parameters an se_e2_a energy model does not take."""
        _check_extras(fparam, aparam, kwargs, name)
        return standard_input(coords, cells, atom_types, self.get_ntypes(), mixed_type)

    def _out_dtype(self, dtype: str) -> type:
        if dtype not in ("native", "fp32", "fp64"):
            raise ValueError(f"dtype must be 'native', 'fp32' or 'fp64', got {dtype!r}")
        return {"native": DTYPES[self.model.descriptor.dtype], "fp32": np.float32, "fp64": np.float64}[dtype]

    def _descriptors(self, coord: np.ndarray, atype: np.ndarray, box: np.ndarray | None) -> np.ndarray:
        """The descriptor of checked frames, float64, in batches of whole frames."""
        per_batch = max(1, DESCRIPTOR_BATCH_ATOMS // atype.shape[1])
        to = functools.partial(torch.as_tensor, device=self.evaluator.device)
        parts = []
        with torch.no_grad():
            for s in range(0, coord.shape[0], per_batch):
                part = slice(s, s + per_batch)
                d = self.model.descriptor_of(to(coord[part]), to(atype[part]), None if box is None else to(box[part]))
                parts.append(d.cpu().numpy())
        return np.concatenate(parts)

    def _last_hidden(self, desc: np.ndarray, atype: np.ndarray) -> np.ndarray:
        to = functools.partial(torch.as_tensor, device=self.evaluator.device)
        with torch.no_grad():
            return self.model.fitting.last_hidden(to(desc), to(atype)).cpu().numpy()


def _check_extras(fparam, aparam, kwargs: dict, name: str) -> None:
    if fparam is not None or aparam is not None:
        raise ValueError("this model takes no frame or atomic parameters (fparam/aparam)")
    unknown = set(kwargs) - {"charge_spin", "efield"}  # DeePMD-kit's calculator passes charge_spin=None
    if unknown or any(v is not None for v in kwargs.values()):
        raise ValueError(f"DeepPot.{name}: unsupported arguments {sorted(kwargs)} for an se_e2_a energy model")


def standard_input(coords, cells, atom_types, ntypes: int,
                   mixed_type: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Checked arrays: coord (nf, natoms, 3) float64, atype (nf, natoms) int64, box (nf, 3, 3) float64 or None.

    Raises ValueError naming what is wrong and where: shapes, types outside the type map, non-finite numbers,
    cells of zero volume.
    """
    atype = np.asarray(atom_types)
    if atype.ndim not in (1, 2) or atype.shape[-1] == 0:
        raise ValueError(f"atom_types must be (natoms,) or (nframes, natoms) with at least one atom, "
                         f"got shape {atype.shape}")
    if atype.dtype.kind not in "iu":
        raise ValueError(f"atom_types must be integers (indices into the type map), got dtype {atype.dtype}")
    natoms = atype.shape[-1]
    coord = np.asarray(coords, dtype=np.float64)
    if coord.size == 0 or coord.size % (natoms * 3):
        raise ValueError(f"coords of shape {coord.shape} do not hold (nframes, {natoms}, 3) values "
                         f"for the {natoms} atoms of atom_types")
    coord = coord.reshape(-1, natoms, 3)
    nf = coord.shape[0]
    if atype.ndim == 1 or atype.shape[0] == 1:  # one frame's types: a view, no copy
        atype = atype.reshape(1, natoms) if nf == 1 else np.tile(atype.reshape(1, natoms), (nf, 1))
    if atype.shape[0] != nf:
        raise ValueError(f"atom_types has {atype.shape[0]} frames but coords has {nf}")
    _check_types(atype, ntypes)
    _check_finite(coord, "coords")
    box = None
    if cells is not None:
        box = np.asarray(cells, dtype=np.float64)
        if box.size != nf * 9:
            raise ValueError(f"cells of shape {box.shape} do not hold (nframes={nf}, 9) values")
        box = box.reshape(nf, 3, 3)
        _check_finite(box.reshape(nf, 1, 9), "cells")
        _check_volume(box)
    return coord, np.ascontiguousarray(atype, dtype=np.int64), box


# From this many values a check's reduction runs in PyTorch, whose reductions use every core: on the GPU machine's
# 16-core host NumPy took 151 us to find 98,304 atoms' positions finite by isfinite and 32 us for their types' range
# (run 229); below it NumPy's smaller overhead wins.
PARALLEL_MIN = 1 << 16


def _in_parallel(values: np.ndarray) -> bool:
    """Whether a check's reduction runs in PyTorch: many values that PyTorch can view (C order, so no negative
    strides) of a dtype its reductions take (float64, or signed integers: no `aminmax` for uint32)."""
    return values.size >= PARALLEL_MIN and values.flags.c_contiguous and values.dtype.kind in "fi"


def _all_finite(values: np.ndarray) -> bool:
    """Whether no value is NaN or infinite; on many values, whether their sum is finite (PyTorch's isfinite pass
    is slower than its sum; an overflow of the sum only sends the caller to its search for the culprit)."""
    if _in_parallel(values):
        return math.isfinite(float(torch.from_numpy(values).sum()))
    return bool(np.isfinite(values).all())


def _check_types(atype: np.ndarray, ntypes: int) -> None:
    if _in_parallel(atype):
        low, high = (int(v) for v in torch.aminmax(torch.from_numpy(atype)))
    else:
        low, high = atype.min(), atype.max()
    if low >= 0 and high < ntypes:  # the common case, without locating anything
        return
    bad = np.argwhere((atype < 0) | (atype >= ntypes))
    if len(bad):
        f, i = bad[0]
        raise ValueError(f"atom type {atype[f, i]} of atom {i} (frame {f}) is not in the model's type map "
                         f"(types 0..{ntypes - 1}); {len(bad)} atom(s) affected")


def _check_finite(values: np.ndarray, name: str) -> None:
    if _all_finite(values):  # over the flat array: a reduction over rows of 3 took 1.4 ms a call for 98,304 atoms,
        return  # most of the input check's time
    bad = np.argwhere(~np.isfinite(values).all(axis=-1))
    if len(bad):
        f, i = bad[0]
        where = f"frame {f}" if name == "cells" else f"atom {i} of frame {f}"
        raise ValueError(f"{name} holds NaN or infinite values ({where}; {len(bad)} row(s) affected)")


def _check_volume(box: np.ndarray) -> None:
    volume = np.abs(np.linalg.det(box))
    scale = np.maximum(np.linalg.norm(box, axis=-1).prod(axis=-1), 1e-300)
    bad = np.flatnonzero(volume <= 1e-10 * scale)
    if len(bad):
        raise ValueError(f"the cell of frame {bad[0]} has zero volume (|det| = {volume[bad[0]]:.3g} Å^3); "
                         f"{len(bad)} frame(s) affected; pass cells=None for a non-periodic system")


__all__ = ["DeepPot", "Evaluator", "default_device", "standard_input"]
