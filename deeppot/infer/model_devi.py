"""Model deviation (`dp model-devi`, spec §13): how much an ensemble of models disagrees on the same frames.

First pure NumPy functions of the models' predictions (nm models, nf frames, natoms atoms; `np.std` is the
population std over the models, axis 0):

    devi_e     = std_k(E_k / N)                                           per frame
    eps_i      = || std_k(F_k,i) ||_2                                     per atom; max/min/avg over atoms
    eps_ab     = std_k(W_k,ab / N)                                        9 components; max, min, ||eps||_2 / 3

`relative=l` divides eps_i by |<F_i>_k| + l, `relative_v=l` divides eps_ab by ||<W / N>_k||_2 + l (one magnitude
per frame: DeePMD-kit divides an (nf, 9) array by an (nf,) one, right for one frame only; here every frame gets
its own). With labels (real-error mode) the std becomes the RMS difference to the label and the magnitudes are the
labels'. Then the `model_devi.out` writer and the drivers that evaluate the models: all models on the same
frames, the neighbour data of a frame batch built once for each group of models sharing rcut and sel, and the
models of a group evaluated in one batched call where they share an architecture (`deeppot.infer.ensemble`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch

from deeppot.data import System, find_systems, load_system
from deeppot.infer.deep_pot import DeepPot, standard_input
from deeppot.infer.ensemble import EnsembleEvaluator
from deeppot.model import EnergyModel

__all__ = ["DEVI_NAMES", "atomic_force_devi", "common_type_map", "deviation_columns", "energy_devi",
           "ensembles_of", "force_devi", "load_models", "make_model_devi", "model_devi_header", "model_deviation",
           "predict", "virial_devi", "write_model_devi"]

log = logging.getLogger(__name__)

DEVI_NAMES = ("max_devi_v", "min_devi_v", "avg_devi_v", "max_devi_f", "min_devi_f", "avg_devi_f", "devi_e")
LABEL_KEYS = ("energy", "force", "virial")

ModelLike = DeepPot | EnergyModel | str | Path
Ensembles = list[tuple[list[int], EnsembleEvaluator]]  # the indices of a group of models and their evaluator


# ---- deviations of predictions (pure NumPy) --------------------------------------------------------------------

def spread(values: np.ndarray, label: np.ndarray | None = None) -> np.ndarray:
    """std over the models (axis 0) or, given the label, the RMS difference sqrt(mean_k (y_k - label)^2)."""
    if label is None:
        return np.std(values, axis=0)
    return np.sqrt(np.mean(np.square(values - label), axis=0))


def magnitude(values: np.ndarray, label: np.ndarray | None = None) -> np.ndarray:
    """|<y>_k| over the last axis (the models' mean), or |label| in real-error mode."""
    return np.linalg.norm(np.mean(values, axis=0) if label is None else label, axis=-1)


def energy_devi(energies: np.ndarray, label: np.ndarray | None = None) -> np.ndarray:
    """devi_e (nf,) from energies per atom (nm, nf) eV/atom [label (nf,) eV/atom]."""
    return spread(energies, label)


def atomic_force_devi(forces: np.ndarray, label: np.ndarray | None = None,
                      relative: float | None = None) -> np.ndarray:
    """eps_i (nf, natoms) from forces (nm, nf, natoms, 3) eV/Å [label (nf, natoms, 3)]; relative: the level l."""
    eps = np.linalg.norm(spread(forces, label), axis=-1)
    if relative is not None:
        eps = eps / (magnitude(forces, label) + relative)
    return eps


def force_devi(forces: np.ndarray, label: np.ndarray | None = None,
               relative: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """max_devi_f, min_devi_f, avg_devi_f (nf,) each: max, min and mean of eps_i over the atoms."""
    eps = atomic_force_devi(forces, label, relative)
    return np.max(eps, axis=-1), np.min(eps, axis=-1), np.mean(eps, axis=-1)


def virial_devi(virials: np.ndarray, label: np.ndarray | None = None,
                relative: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """max_devi_v, min_devi_v, avg_devi_v (nf,) from virials per atom (nm, nf, 9) eV/atom [label (nf, 9)]."""
    eps = spread(virials, label)
    if relative is not None:
        eps = eps / (magnitude(virials, label) + relative)[:, None]  # one magnitude per frame
    return np.max(eps, axis=-1), np.min(eps, axis=-1), np.linalg.norm(eps, axis=-1) / 3


def deviation_columns(energies: np.ndarray, forces: np.ndarray, virials: np.ndarray,
                      labels: Mapping[str, np.ndarray] | None = None, atomic: bool = False,
                      relative: float | None = None, relative_v: float | None = None) -> np.ndarray:
    """The value columns of model_devi.out (nf, 7 [+ natoms]) in `DEVI_NAMES` order [then eps_i of every atom].

    energies (nm, nf) and virials (nm, nf, 9) per atom, forces (nm, nf, natoms, 3); `labels` (real-error mode):
    energy (nf,) and virial (nf, 9) per atom, force (nf, natoms, 3).
    """
    lab = {} if labels is None else labels
    eps_f = atomic_force_devi(forces, lab.get("force"), relative)
    columns = [*virial_devi(virials, lab.get("virial"), relative_v),
               np.max(eps_f, axis=-1), np.min(eps_f, axis=-1), np.mean(eps_f, axis=-1),
               energy_devi(energies, lab.get("energy"))]
    table = np.stack(columns, axis=1)
    return np.concatenate([table, eps_f], axis=1) if atomic else table


# ---- model_devi.out ---------------------------------------------------------------------------------------------

def model_devi_header(header: str = "", atomic: bool = False) -> str:
    """The header block (without the '# ' that numpy.savetxt puts before each line): `header`, then the names."""
    names = f"{'step':10s}" + "".join(f"{name:19s}" for name in DEVI_NAMES)
    return f"{header}\n{names}" + (f"{'atm_devi_f(N)':19s}" if atomic else "")


def write_model_devi(path: str | Path, devi: np.ndarray, header: str = "", atomic: bool = False) -> None:
    """Append `devi` (nf, 8 [+ natoms]: step, then `DEVI_NAMES` [, eps_i]) to `path` in DeePMD-kit's format:
    a '# header' line, the '# step ...' names line, rows of '%12d' then '%19.6e' values, no delimiter."""
    ncol = len(DEVI_NAMES) + 1
    if devi.ndim != 2 or devi.shape[1] < ncol or (devi.shape[1] > ncol) != atomic:
        raise ValueError(f"model deviation rows need {ncol} columns{' + one per atom' if atomic else ''}, "
                         f"got shape {devi.shape}")
    with open(path, "ab") as fp:  # appended, as DeePMD-kit does: several systems and runs share one file
        np.savetxt(fp, devi, fmt=["%12d"] + ["%19.6e"] * (devi.shape[1] - 1), delimiter="",
                   header=model_devi_header(header, atomic))


# ---- evaluating the ensemble ------------------------------------------------------------------------------------

def load_models(models: Sequence[ModelLike], device: str | torch.device | None = None) -> list[DeepPot]:
    """`DeepPot`s of model files, `EnergyModel`s or `DeepPot`s (kept as they are)."""
    if len(models) == 0:
        raise ValueError("model deviation needs at least one model")
    return [m if isinstance(m, DeepPot) else DeepPot(m, device) for m in models]


def common_type_map(pots: Sequence[DeepPot], names: Sequence[str] | None = None) -> list[str]:
    """The type map all models share; ValueError naming the first model that differs."""
    maps = [pot.get_type_map() for pot in pots]
    names = names or [f"model {i}" for i in range(len(pots))]
    for name, type_map in zip(names, maps, strict=True):
        if type_map != maps[0]:
            raise ValueError(f"the models do not share one type map: {names[0]} has {maps[0]} but {name} has "
                             f"{type_map}; model deviation needs models of the same type map")
    return maps[0]


def neighbor_groups(pots: Sequence[DeepPot]) -> list[list[int]]:
    """Indices of the models that can share neighbour data: equal rcut, sel and device."""
    groups: dict[tuple, list[int]] = {}
    for i, pot in enumerate(pots):
        key = (pot.get_rcut(), tuple(pot.model.sel), str(pot.evaluator.device))
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def ensembles_of(pots: Sequence[DeepPot], batched: bool | None = None) -> Ensembles:
    """The groups of models that share neighbour data, each with the `EnsembleEvaluator` of its models (batched:
    None stacks a group where its models share an architecture, True insists, False evaluates model by model)."""
    return [(group, EnsembleEvaluator([pots[i].evaluator for i in group], batched))
            for group in neighbor_groups(pots)]


def predict(pots: Sequence[DeepPot], coord: np.ndarray, atype: np.ndarray, box: np.ndarray | None,
            ensembles: Ensembles | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Energy (nm, nf) eV, force (nm, nf, natoms, 3) eV/Å, virial (nm, nf, 9) eV of every model.

    coord (nf, natoms, 3), atype (nf, natoms) int64, box (nf, 3, 3) or None: checked arrays (`standard_input`).
    ensembles: `ensembles_of(pots)`, built once by callers that predict block after block.
    """
    outs: list[dict[str, np.ndarray]] = [{} for _ in pots]
    for group, ensemble in ensembles if ensembles is not None else ensembles_of(pots):
        out = _predict_group(ensemble, coord, atype, box)
        for k, i in enumerate(group):
            outs[i] = {key: out[key][k] for key in LABEL_KEYS}
    energy, force, virial = (np.stack([out[key] for out in outs]) for key in LABEL_KEYS)
    return energy, force, virial


def _predict_group(ensemble: EnsembleEvaluator, coord: np.ndarray, atype: np.ndarray,
                   box: np.ndarray | None) -> dict[str, np.ndarray]:
    """Models of equal rcut and sel on the same frames: each frame batch's neighbour data is built once, and all
    models are evaluated on it together. Energy (nm, nf), force (nm, nf, natoms, 3), virial (nm, nf, 9)."""
    evaluator = ensemble.evaluators[0]
    c, a = (torch.tensor(x) for x in (coord, atype))  # copies on the host (inputs may be read-only): planned there
    b = None if box is None else torch.tensor(box)
    parts: list[dict[str, np.ndarray]] = []
    sort = any(ev.sorted_lists for ev in ensemble.evaluators)  # one list for every model
    # the evaluator's own frame batches (bounded atoms; on a GPU also within the O(N^2) builder's pair limit)
    for frames in evaluator.frame_batches(c, b):
        flat = evaluator.host_neighbors(c[frames], a[frames], None if b is None else b[frames], sort=sort)
        out = ensemble.evaluate_neighbors(flat)
        parts.append({key: out[key].cpu().numpy() for key in LABEL_KEYS})
    return {key: np.concatenate([p[key] for p in parts], axis=1) for key in LABEL_KEYS}


def model_deviation(models: Sequence[ModelLike], coord: np.ndarray, box: np.ndarray | None, atype: np.ndarray,
                    frequency: int = 1, labels: Mapping[str, np.ndarray] | None = None, atomic: bool = False,
                    relative: float | None = None, relative_v: float | None = None,
                    device: str | torch.device | None = None, ensembles: Ensembles | None = None) -> np.ndarray:
    """DeePMD-kit's `calc_model_devi`: rows (nf, 8 [+ natoms]) of step (frame index x frequency), `DEVI_NAMES`
    [, eps_i of every atom].

    coord (nf, natoms, 3) Å; box (nf, 3, 3) or (nf, 9), or None without periodic boundaries; atype (natoms,) or
    (nf, natoms). `labels` (real-error mode, the units of the data files): energy (nf,) eV, force
    (nf, natoms, 3) eV/Å, virial (nf, 9) eV. Frames go in blocks of the first model's batch size, so memory is
    bounded by the block, not by the trajectory. ensembles: `ensembles_of` these models, when already built.
    """
    pots = load_models(models, device)
    coord, atype, box = standard_input(coord, box, atype, len(common_type_map(pots)))
    ensembles = ensembles if ensembles is not None else ensembles_of(pots)
    labels = _checked_labels(labels, coord.shape[:2])
    nf, natoms = atype.shape
    per_block = max(1, pots[0].evaluator.batch_atoms // natoms)
    blocks = []
    for s in (slice(i, i + per_block) for i in range(0, nf, per_block)):
        energy, force, virial = predict(pots, coord[s], atype[s], None if box is None else box[s], ensembles)
        block_labels = None if labels is None else {key: value[s] for key, value in labels.items()}
        blocks.append(deviation_columns(energy / natoms, force, virial / natoms, block_labels, atomic,
                                        relative, relative_v))
    return np.column_stack([np.arange(nf, dtype=np.int64) * frequency, np.concatenate(blocks)])


def _checked_labels(labels: Mapping[str, np.ndarray] | None, shape: tuple[int, int]) -> dict | None:
    """Labels reshaped to energy (nf,), force (nf, natoms, 3), virial (nf, 9), all per atom but the force."""
    if labels is None:
        return None
    missing = [key for key in LABEL_KEYS if key not in labels]
    if missing:
        raise ValueError(f"real-error labels need {', '.join(LABEL_KEYS)}; missing {', '.join(missing)}")
    nf, natoms = shape
    try:
        return {"energy": np.asarray(labels["energy"], dtype=np.float64).reshape(nf) / natoms,
                "force": np.asarray(labels["force"], dtype=np.float64).reshape(nf, natoms, 3),
                "virial": np.asarray(labels["virial"], dtype=np.float64).reshape(nf, 9) / natoms}
    except ValueError as err:
        raise ValueError(f"real-error labels do not fit {nf} frames of {natoms} atoms: {err}") from err


def make_model_devi(models: Sequence[ModelLike], systems: str | Path | Sequence[str | Path],
                    output: str | Path = "model_devi.out", frequency: int = 1, real_error: bool = False,
                    atomic: bool = False, relative: float | None = None, relative_v: float | None = None,
                    device: str | torch.device | None = None) -> list[np.ndarray]:
    """`dp model-devi`: the deviation of every system found (recursively) under `systems`, appended to `output`,
    one block per system headed by its path; all its sets in order, atoms in file order. Returns the blocks."""
    pots = load_models(models, device)
    type_map = common_type_map(pots, [str(m) if isinstance(m, str | Path) else f"model {i}"
                                      for i, m in enumerate(models)])
    ensembles = ensembles_of(pots)  # once for all systems (the stacked weights, and one log line)
    results = []
    for path in find_systems(systems):
        system = load_system(path, type_map=type_map, sort_atoms=False)
        log.info("model deviation of %d models on %d frames of %s", len(pots), system.nframes, path)
        labels = _system_labels(system) if real_error else None
        devi = model_deviation(pots, system.coord, system.box, system.atype, frequency, labels, atomic,
                               relative, relative_v, ensembles=ensembles)
        write_model_devi(output, devi, header=path, atomic=atomic)
        results.append(devi)
    return results


def _system_labels(system: System) -> dict[str, np.ndarray]:
    """Energy, force and virial labels; a label not on disk is zero (as in DeePMD-kit), with a warning."""
    for key in LABEL_KEYS:
        if not system.find[key]:
            log.warning("%s: no %s labels; the real error of %s is taken against zeros", system.path, key, key)
    return {key: system.labels[key] for key in LABEL_KEYS}
