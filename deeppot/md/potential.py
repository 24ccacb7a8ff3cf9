"""Potentials for MD: energy, forces and virial of one system from its positions and cell, neighbour list inside.

The interface (`Potential`) is small so that a test potential (`deeppot.md.testing.LennardJones`) and the Deep
Potential are interchangeable:

    type_map, device: the model's type names and where it runs
    skin_used(positions, cell) -> 0-dim float on the device: how much of the neighbour list's skin the motion since
        its build used (0 at a build; > 1: the list may miss a pair; no host sync)
    compute(positions, cell, rebuild) -> energy () eV, forces (N, 3) eV/Å, virial (3, 3) eV, float64
    rebuilds: how many neighbour-list builds so far; nlist_reference() / restore_nlist(ref): the build's positions
    and cell, so that a restarted run rebuilds the same list and continues bit for bit.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
from ase import Atoms
from torch import Tensor

from deeppot.infer.deep_pot import Evaluator
from deeppot.infer.ensemble import EnsembleEvaluator
from deeppot.infer.evaluate import FlatNeighbors
from deeppot.infer.model_devi import deviation_columns
from deeppot.infer.neighbors import SkinNeighborList
from deeppot.model import EnergyModel

__all__ = ["DeepPotential", "Potential", "atom_types"]

log = logging.getLogger(__name__)

# Up to this many atoms a CUDA-graph replay of the evaluation is the default (H100, water: 192 atoms 4.3 -> 0.5 ms,
# 12,288 atoms 10.2 -> 9.1 ms; at 98,304 atoms the graph, whose fitting nets then ran on every atom, was 4% slower).
# With the nets on their own type's atoms in the graph (run 182, H200, float32 MD at 98,304 atoms): 16.02 and 15.90
# ms a step against 16.18 and 16.11 eager, for 10% more memory (3.4 against 3.1 GiB), so the limit stays.
GRAPH_MAX_ATOMS = 20_000
OUTPUTS = ("energy", "force", "virial")


def atom_types(symbols: Sequence[str], type_map: Sequence[str]) -> torch.Tensor:
    unknown = sorted(set(symbols) - set(type_map))
    if unknown:
        raise ValueError(f"element(s) {', '.join(unknown)} not in the model's type map {list(type_map)}")
    index = {name: i for i, name in enumerate(type_map)}
    return torch.tensor([index[s] for s in symbols], dtype=torch.int64)


class Potential(Protocol):
    rebuilds: int
    type_map: list[str]  # model type index -> element
    device: torch.device

    def skin_used(self, positions: Tensor, cell: Tensor | None) -> Tensor: ...

    def compute(self, positions: Tensor, cell: Tensor | None, rebuild: bool) -> tuple[Tensor, Tensor, Tensor]: ...

    def nlist_reference(self) -> dict | None: ...

    def restore_nlist(self, reference: dict | None) -> None: ...


class DeepPotential:
    """A Deep Potential (and optionally an ensemble for model deviation) on a Verlet-skin neighbour list.

    models: `EnergyModel`s; the first drives the dynamics, all are evaluated by `deviation` on the same neighbour
    data, so they must share rcut and sel (and the type map). atype (N,) int64 model types. skin Å: the list is
    built with rcut + skin and rebuilt when an atom moved more than skin / 2 (or the cell strained enough).
    batched: how `deviation` evaluates the models (`deeppot.infer.ensemble.EnsembleEvaluator`): None in one
    batched call where they share an architecture, else one after another; True insists; False never.
    sort_neighbors: False (the default) updates the list without sorting each row by distance
    (`SkinNeighborList(sort=False)`: the same neighbours, so the same energies to rounding, for less per step;
    a model whose statistics differ slot by slot gets the sorted list anyway); True keeps DeePMD's slot order.
    tf32: the mixed-precision opt-in of `deeppot.infer.Evaluator` for every model (float32 models on a GPU).
    graph: replay the first model's evaluation from a CUDA graph (`deeppot.infer.graph.GraphedEvaluation`), and
    with it the whole MD step (`step_graphs`, read by `deeppot.md.Stepper`), one graph for the run (the skin list
    keeps fixed-capacity buffers); None: on a CUDA device for up to GRAPH_MAX_ATOMS atoms, where launches, not
    arithmetic, bound a step.
    """

    def __init__(self, models: Sequence[EnergyModel], atype: Tensor, skin: float = 2.0,
                 device: torch.device | str | None = None, batched: bool | None = None,
                 sort_neighbors: bool = False, graph: bool | None = None, tf32: bool = False) -> None:
        if not models:
            raise ValueError("at least one model is needed")
        first = models[0]
        for i, model in enumerate(models[1:], 1):
            if (model.rcut, model.sel, model.type_map) != (first.rcut, first.sel, first.type_map):
                raise ValueError(f"model {i} has rcut {model.rcut}, sel {model.sel}, type map {model.type_map}; "
                                 f"model 0 has {first.rcut}, {first.sel}, {first.type_map}: model deviation during "
                                 f"MD evaluates every model on one neighbour list, so these must be equal")
        self.evaluators = [Evaluator(m, device, fused=None, tf32=tf32) for m in models]
        self.ensemble = EnsembleEvaluator(self.evaluators, batched)  # a lone model is simply evaluated
        self.device = self.evaluators[0].device
        self.atype = atype.to(self.device)[None]  # (1, N)
        self.graphed = self._graphed(graph)
        # the whole step too (H100, water f32, run 29: 192 atoms 2.9 -> 0.85 ms, 12,288 atoms 8.7 -> 8.1 ms a step)
        self.step_graphs = self.graphed is not None
        self.capturing = False  # inside the capture of a whole MD step (`deeppot.md.step_graph`): no nested graph
        # with graphs, fixed-capacity neighbour buffers: a build refills them and the graphs stay valid
        # unsorted only where every model's slots are interchangeable (`Evaluator.sorted_lists`)
        sort = sort_neighbors or any(ev.sorted_lists for ev in self.evaluators)
        self.nlist = SkinNeighborList(first.rcut, first.sel, skin, sort=sort, static=self.graphed is not None)
        self.flat: FlatNeighbors | None = None  # the neighbour data of the last `compute`
        self.type_rows: dict = {}  # the centres of each type, made once for every step's neighbour data
        self.orders: dict = {}  # the centres' order for the kernels (`deeppot.infer.order`), made once a build
        self.evaluations = 0  # calls of `compute` (steps run twice after a late rebuild count twice)
        self.warned_close = False

    @classmethod
    def for_atoms(cls, models: Sequence[EnergyModel | str | Path], atoms: Atoms, skin: float = 2.0,
                  device: torch.device | str | None = None, batched: bool | None = None,
                  graph: bool | None = None, tf32: bool = False) -> DeepPotential:
        """The potential of model files or `EnergyModel`s for these ASE atoms (types from their symbols)."""
        from deeppot.io import load_model

        models = [m if isinstance(m, EnergyModel) else load_model(m) for m in models]
        return cls(models, atom_types(atoms.get_chemical_symbols(), models[0].type_map), skin, device, batched,
                   graph=graph, tf32=tf32)

    @property
    def model(self) -> EnergyModel:
        return self.evaluators[0].model

    @property
    def type_map(self) -> list[str]:
        return list(self.model.type_map)

    @property
    def rebuilds(self) -> int:
        return self.nlist.builds

    def skin_used(self, positions: Tensor, cell: Tensor | None) -> Tensor:
        if self.nlist.ref is None:
            return torch.full((), float("inf"), dtype=positions.dtype, device=positions.device)
        return self.nlist.skin_used(positions[None], None if cell is None else cell[None])

    def compute(self, positions: Tensor, cell: Tensor | None, rebuild: bool) -> tuple[Tensor, Tensor, Tensor]:
        coord, box = positions[None], None if cell is None else cell[None]
        self.evaluations += 1
        built = rebuild or self.nlist.ref is None
        data = self.nlist.build(coord, self.atype, box) if built else self.nlist.update(coord, box)
        if built:
            self.orders.clear()
        self.flat = FlatNeighbors.from_frames(data.ext_coord, data.ext_atype, data.nlist, data.mapping,
                                              self.type_rows, self.orders)
        if built:  # a build syncs with the host anyway: a good moment to look at the closest pair
            self.check_distances()
        if self.graphed is None:
            out = self.evaluators[0].evaluate_neighbors(self.flat)
        elif self.capturing:
            out = self.graphed.run_eager(self.flat)
        else:  # the graph's output buffers are overwritten by the next replay: the state keeps copies
            out = {key: value.clone() for key, value in self.graphed(self.flat).items() if key in OUTPUTS}
        return out["energy"][0], out["force"][0], out["virial"][0].reshape(3, 3)

    def _graphed(self, graph: bool | None):
        """The CUDA-graph replay of the first model's evaluation, or None for eager evaluation."""
        if graph is None:
            graph = self.device.type == "cuda" and self.atype.shape[1] <= GRAPH_MAX_ATOMS
        if not graph:
            return None
        from deeppot.infer.graph import GraphedEvaluation

        return GraphedEvaluation(self.evaluators[0])

    def nlist_reference(self) -> dict | None:
        ref = self.nlist.ref
        return None if ref is None else {"coord": ref.coord[0].clone(), "box": None if ref.box is None
                                         else ref.box[0].clone()}

    def restore_nlist(self, reference: dict | None) -> None:
        """Build the list at the positions and cell of an earlier build (a restart file's), so that updates from
        there give the same neighbour data, in the same order, as the run that wrote the file."""
        if reference is not None:
            box = reference["box"]
            self.nlist.build(reference["coord"].to(self.device)[None], self.atype,
                             None if box is None else box.to(self.device)[None])

    def deviation(self) -> np.ndarray:
        """The 7 model-deviation columns (`deeppot.infer.model_devi.DEVI_NAMES`) of every model at the positions
        of the last `compute`, on its neighbour data (a host sync: call it every devi-freq steps)."""
        out = self.ensemble.evaluate_neighbors(self.flat)
        natoms = self.atype.shape[1]
        energy, force, virial = (out[key].cpu().numpy() for key in ("energy", "force", "virial"))
        return deviation_columns(energy / natoms, force, virial / natoms)[0]

    def check_distances(self) -> None:
        """Warn (once) when two atoms are closer than the model's min_nbor_dist (the closest pair in its training
        data, when the model records it): the model extrapolates there."""
        limit = float(self.model.min_nbor_dist)
        if limit > 0 and not self.warned_close and (closest := self.min_distance()) < limit:
            log.warning("two atoms are %.3f Å apart, closer than the model's min_nbor_dist %.3f Å (the closest "
                        "pair in its training data): its energies there are an extrapolation", closest, limit)
            self.warned_close = True

    def min_distance(self) -> float:
        """The shortest distance of an atom to a neighbour within rcut in the last neighbour data (inf: none)."""
        flat = self.flat
        rij = flat.pair_vectors(0, flat.ncentre, self.model.rcut)
        dist = torch.linalg.vector_norm(rij, dim=-1).masked_fill(flat.nlist < 0, float("inf"))
        return float(dist.min()) if dist.numel() else float("inf")
