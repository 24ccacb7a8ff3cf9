"""`deeppot change-bias`: DeePMD-kit's `dp change-bias`, re-fitting a model's per-type energy shift (spec §5.3).

Modes (DeePMD-kit's names):
- "change" (change-by-statistic): evaluate the model on the frames, fit the residual E_label - E_model by least
  squares over the per-type atom counts, E_f - E_model,f ~ sum_t n_{f,t} db_t, and ADD db to `out_bias`;
- "set" (set-by-statistic): fit the labels themselves, E_f ~ sum_t n_{f,t} b_t, and overwrite `out_bias`;
- user values (`-b`): write them into `out_bias` directly.
The fit is `numpy.linalg.lstsq(rcond=None)` with one row per frame (`deeppot.model.stats.energy_bias`), as at
training. Only `out_bias` changes: a TF-converted model keeps its fitting `bias_atom_e` (as in DeePMD-kit).

The output keeps the input's format and everything else in it: a .dp/.yaml file gets its `out_bias` variable
replaced, a deeppot or DeePMD-kit checkpoint its out_bias tensor (optimizer state and step are kept). It is written
to a temporary file and renamed, so a failure never leaves half a model.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from deeppot.data import DataError, System, load_systems, read_datafile
from deeppot.infer.deep_pot import Evaluator
from deeppot.io import load_model
from deeppot.io.deepmd_pt import PREFIX, deepmd_state_dict, read_torch_file
from deeppot.io.dp_file import load_dp, save_dp
from deeppot.io.model_file import DP_SUFFIXES, save_checkpoint
from deeppot.model import EnergyModel
from deeppot.model.stats import energy_bias

log = logging.getLogger(__name__)

MODES = ("change", "set")


@dataclass(frozen=True)
class BiasChange:
    type_map: list[str]
    old: np.ndarray  # (ntypes,) out_bias before, eV
    new: np.ndarray  # (ntypes,) out_bias after, eV
    output: Path


@dataclass(frozen=True)
class BiasSample:
    """The frames of the fit: per-type atom counts (nframes, ntypes) and energy labels (nframes,) eV."""

    type_counts: np.ndarray
    energy: np.ndarray


def default_output(model_path: str | Path) -> Path:
    """DeePMD-kit's default: `model.pt` -> `model_updated.pt` (any suffix)."""
    path = Path(model_path)
    return path.with_name(f"{path.stem}_updated{path.suffix}")


def sample_systems(systems: Sequence[System], numb_batch: int) -> list[System]:
    """The first `numb_batch` frames of each system (0: all). DeePMD-kit draws them at random (batch size 1)."""
    if numb_batch < 0:
        raise ValueError(f"-n/--numb-batch must be >= 0, got {numb_batch}")
    for system in systems:
        if not system.find["energy"]:
            raise DataError(f"{system.path}: no energy.npy; fitting the energy bias needs energy labels")
    if numb_batch == 0:
        return list(systems)
    return [_first_frames(s, numb_batch) for s in systems]


def _first_frames(system: System, n: int) -> System:
    return select_frames(system, slice(0, min(n, system.nframes)))


def select_frames(system: System, index) -> System:
    """The frames `index` (a slice or an index array) of a system, as a new System."""
    return System(system.path, system.atype, system.coord[index], None if system.box is None else system.box[index],
                  {k: v[index] for k, v in system.labels.items()}, system.find, system.order, system.type_names)


def bias_sample(systems: Sequence[System], ntypes: int, target: Sequence[np.ndarray] | None = None) -> BiasSample:
    """Rows of the least-squares fit; `target` replaces the energy labels (one (nf,) array per system)."""
    counts = [np.tile(np.bincount(s.atype, minlength=ntypes), (s.nframes, 1)) for s in systems]
    energy = target if target is not None else [s.labels["energy"] for s in systems]
    return BiasSample(np.concatenate(counts).astype(np.float64), np.concatenate(energy).astype(np.float64))


def model_energies(model: EnergyModel, systems: Sequence[System], device: torch.device | str | None) -> list:
    """The model's energy (nf,) of every frame of each system, with the chunked inference engine."""
    evaluator = Evaluator(model, device)
    energies = []
    for s in systems:  # on the host: the evaluator copies each batch and plans from the host's copy
        coord, atype = torch.from_numpy(s.coord), torch.from_numpy(s.atype).expand(s.nframes, -1)
        box = None if s.box is None else torch.from_numpy(s.box)
        energies.append(evaluator.evaluate(coord, atype, box)["energy"].cpu().numpy())
    return energies


def fitted_bias(model: EnergyModel, systems: Sequence[System], mode: str,
                device: torch.device | str | None = None) -> np.ndarray:
    """The new out_bias (ntypes,) from the frames of `systems` in `mode` ("change" or "set")."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected 'change' or 'set'")
    ntypes = len(model.type_map)
    old = model.fitting.out_bias.detach().cpu().numpy().astype(np.float64)
    if mode == "set":
        sample = bias_sample(systems, ntypes)
        bias, rmse = energy_bias(sample.type_counts, sample.energy)
        log.info("RMSE of energy per atom after linear regression is: %s in the unit of energy.", rmse)
        return bias
    predicted = model_energies(model, systems, device)
    residual = [s.labels["energy"] - e for s, e in zip(systems, predicted, strict=True)]
    sample = bias_sample(systems, ntypes, residual)
    delta, rmse = energy_bias(sample.type_counts, sample.energy)
    log.info("RMSE of energy per atom after linear regression is: %s in the unit of energy.", rmse)
    return old + delta


def user_bias(model: EnergyModel, bias_value: Sequence[float]) -> np.ndarray:
    ntypes = len(model.type_map)
    if len(bias_value) != ntypes:
        raise ValueError(f"-b/--bias-value needs one value per type of the model's type_map {model.type_map}, "
                         f"got {len(bias_value)}")
    return np.asarray(bias_value, dtype=np.float64)


def write_out_bias(model_path: str | Path, output: str | Path, out_bias: np.ndarray) -> None:
    """Copy the model file to `output` with its out_bias replaced, keeping its format and every other entry."""
    model_path, output = Path(model_path), Path(output)
    if (model_path.suffix in DP_SUFFIXES) != (output.suffix in DP_SUFFIXES):
        raise ValueError(f"{output}: the output keeps the input's format ({model_path.suffix}); "
                         "convert it afterwards with `deeppot convert`")
    if model_path.suffix in DP_SUFFIXES:
        data = load_dp(model_path)
        variables = data["model"]["@variables"]
        old = np.asarray(variables["out_bias"])  # (1, ntypes, 1) for an energy model
        variables["out_bias"] = _replaced(old, out_bias, model_path)
        save_dp(output, data)
        return
    state = read_torch_file(model_path)
    if isinstance(state, dict) and "config" in state:  # a deeppot checkpoint
        state["model"]["fitting.out_bias"] = torch.as_tensor(out_bias, dtype=torch.float64)
    else:  # load_model has accepted it, so it is DeePMD-kit's
        sd = deepmd_state_dict(state)
        key = f"{PREFIX}atomic_model.out_bias"
        old = sd[key]
        sd[key] = torch.as_tensor(_replaced(old.numpy(), out_bias, model_path), dtype=old.dtype)
    save_checkpoint(output, state)


def _replaced(old: np.ndarray, out_bias: np.ndarray, path: Path) -> np.ndarray:
    """old (1, ntypes, 1) with its energy entries replaced by out_bias (ntypes,)."""
    if old.ndim != 3 or old.shape[1] != out_bias.shape[0]:
        raise ValueError(f"{path}: out_bias of shape {old.shape} is not one energy output per type")
    new = old.astype(np.float64, copy=True)
    new[0, :, 0] = out_bias
    return new.astype(old.dtype)


def change_bias(model_path: str | Path, systems: str | Sequence[str] | None = None, datafile: str | None = None,
                numb_batch: int = 0, mode: str = "change", bias_value: Sequence[float] | None = None,
                output: str | Path | None = None, device: str | torch.device | None = None) -> BiasChange:
    """Re-fit (or set) the model's per-type energy shift and write the updated model (see the module doc)."""
    model = load_model(model_path)
    output = Path(output) if output else default_output(model_path)
    old = model.fitting.out_bias.detach().cpu().numpy().astype(np.float64)
    if bias_value is not None:
        new = user_bias(model, bias_value)
    else:
        paths = read_datafile(datafile) if datafile else (systems if systems is not None else ".")
        loaded = sample_systems(load_systems(paths, model.type_map, sort_atoms=False), numb_batch)
        log.info("fitting the energy bias (%s) on %d frames of %d system(s)", mode,
                 sum(s.nframes for s in loaded), len(loaded))
        new = fitted_bias(model, loaded, mode, device)
    log.info("Change output bias of %s from %s to %s.", model.type_map, old, new)
    write_out_bias(model_path, output, new)
    log.info("Saved model to %s", output)
    return BiasChange(list(model.type_map), old, new, output)
