"""`dp test` for energy models (spec §11.1): errors of a model against labelled systems.

Per system: load the data in file atom order (`sort_atoms=False`), keep at most `numb_test` frames (shuffled
first if asked), evaluate in chunks of frames, print the MAE/RMSE report and optionally append the detail
files. After all systems: the errors averaged over systems, each weighted by its number of elements.
Metric keys (`TestReport.systems[path]`, `TestReport.weighted`): mae_e, rmse_e (eV), mae_e_per_atom,
rmse_e_per_atom (eV), mae_f, rmse_f (eV/Å), mae_fw, rmse_fw (atom_pref-weighted, eV/Å), mae_v, rmse_v,
mae_v_per_atom, rmse_v_per_atom (eV), mae_s, rmse_s (eV/Å^3: -virial / volume), mae_ae, rmse_ae (eV, `atomic=True`,
per system only).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch

from deeppot.config.input import data_path, load_input, normalize_input
from deeppot.data import DataError, find_systems, load_system, read_datafile
from deeppot.infer import Evaluator
from deeppot.model import EnergyModel

__all__ = ["SystemResult", "TestReport", "run_test", "system_metrics", "systems_to_test", "weighted_average",
           "write_details"]

SYSTEM_HEADER = "# ---------------output of dp test---------------"
AVERAGE_HEADER = "# ----------weighted average of errors-----------"
FOOTER = "# -----------------------------------------------"

# (metric key, label, unit) in the order DeePMD-kit prints them; labels keep its column alignment.
REPORT_LINES = (
    ("mae_e", "Energy MAE         ", "eV"),
    ("rmse_e", "Energy RMSE        ", "eV"),
    ("mae_e_per_atom", "Energy MAE/Natoms  ", "eV"),
    ("rmse_e_per_atom", "Energy RMSE/Natoms ", "eV"),
    ("mae_f", "Force  MAE         ", "eV/Å"),
    ("rmse_f", "Force  RMSE        ", "eV/Å"),
    ("mae_fw", "Force weighted MAE ", "eV/Å"),
    ("rmse_fw", "Force weighted RMSE", "eV/Å"),
    ("mae_v", "Virial MAE         ", "eV"),
    ("rmse_v", "Virial RMSE        ", "eV"),
    ("mae_v_per_atom", "Virial MAE/Natoms  ", "eV"),
    ("rmse_v_per_atom", "Virial RMSE/Natoms ", "eV"),
    ("mae_s", "Stress MAE         ", "eV/Å³"),
    ("rmse_s", "Stress RMSE        ", "eV/Å³"),
    ("mae_ae", "Atomic ener MAE    ", "eV"),
    ("rmse_ae", "Atomic ener RMSE   ", "eV"),
)
PER_SYSTEM_ONLY = ("mae_ae", "rmse_ae")  # DeePMD-kit leaves atomic-energy errors out of the average

VIRIAL_NAMES = [f"v{a}{b}" for a in "xyz" for b in "xyz"]

Metric = tuple[float, float]  # (value, weight = number of elements it averages over)


@dataclass(frozen=True, eq=False)
class SystemResult:
    """Labels and predictions of the tested frames of one system, atoms in file order.

    `data`: energy (nf,) eV, force (nf, natoms, 3) eV/Å, virial (nf, 9) eV, atom_pref (nf, natoms),
    atom_ener (nf, natoms) eV; a label that is not on disk holds its default (`find[key]` is False).
    `pred`: energy (nf,), force (nf, natoms, 3), virial (nf, 9), atom_energy (nf, natoms).
    `volume`: each periodic frame's cell volume (None without a cell).
    """

    path: str
    natoms: int
    periodic: bool
    find: dict[str, bool]
    data: dict[str, np.ndarray]
    pred: dict[str, np.ndarray]
    volume: np.ndarray | None = None  # (nf,) |det box| Å^3 of periodic frames, for the stress

    @property
    def nframes(self) -> int:
        return int(self.pred["energy"].shape[0])


@dataclass
class TestReport:
    """Everything `dp test` reports: per-system and weighted metrics (floats), the arrays, the log lines."""

    __test__: ClassVar[bool] = False  # not a pytest test class despite the name

    systems: dict[str, dict[str, float]] = field(default_factory=dict)
    weighted: dict[str, float] = field(default_factory=dict)
    results: list[SystemResult] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def parity_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(energy/atom data, energy/atom pred, force data, force pred) over the systems having those labels.

        Energies per atom (n,) eV; forces as flat components (m,) eV/Å.
        """
        e = [r for r in self.results if r.find["energy"]]
        f = [r for r in self.results if r.find["force"]]
        return (_cat([r.data["energy"] / r.natoms for r in e]), _cat([r.pred["energy"] / r.natoms for r in e]),
                _cat([r.data["force"].ravel() for r in f]), _cat([r.pred["force"].ravel() for r in f]))


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0)


def systems_to_test(system: str | None = ".", datafile: str | None = None, train_json: str | None = None,
                    valid_json: str | None = None) -> list[str]:
    """The systems `dp test` reads, from the first source given: an input.json's training or validation data
    (`--train-data`/`--valid-data`: relative paths from the file's folder, else from here; its rglob_patterns),
    a datafile of one system path a line (`-f`), or every system under `system` (`-s`)."""
    for path, section in ((train_json, "training_data"), (valid_json, "validation_data")):
        if path is not None:
            return _systems_of_input(Path(path), section)
    if datafile is not None:
        return read_datafile(datafile)
    if system is None:
        raise ValueError("dp test: no data source (a system folder, a datafile or an input.json)")
    return find_systems(system)


def _systems_of_input(path: Path, section: str) -> list[str]:
    data = normalize_input(load_input(path))["training"].get(section)
    if not data or not data.get("systems"):
        raise DataError(f"{path}: no training.{section}.systems to test on")
    systems = [data["systems"]] if isinstance(data["systems"], str) else list(data["systems"])
    # DeePMD-kit's rule, the path from input.json's folder; where nothing is there, the path as given (from the
    # working directory, where `deeppot train` looks first)
    return find_systems([data_path(s, path.parent, input_first=True) for s in systems], data.get("rglob_patterns"))


def run_test(model: EnergyModel, systems: Sequence[str], numb_test: int = 0, detail_file: str | None = None,
             shuffle_test: bool = False, rand_seed: int | None = None, atomic: bool = False,
             batch_frames: int = 16, log: Callable[[str], None] = print) -> TestReport:
    """Test `model` on each system directory (spec §11.1); log the report and return it.

    `numb_test`: at most this many frames per system (0 = all); `shuffle_test`: permute the frames first,
    with one random stream seeded once by `rand_seed` (DeePMD-kit's `dp_random`); `detail_file`: prefix of
    the `.e.out`/`.e_peratom.out`/`.f.out`/`.v.out`/`.v_peratom.out` files; `atomic`: also test atom_ener.
    """
    if not systems:
        raise ValueError("dp test: no system to test")
    rng = np.random.RandomState(None if rand_seed is None else rand_seed % 2**32)
    report = TestReport()
    per_system: list[dict[str, Metric]] = []
    for index, path in enumerate(systems):
        res = evaluate_system(model, path, numb_test, rng if shuffle_test else None, atomic, batch_frames)
        metrics = system_metrics(res, atomic)
        per_system.append(metrics)
        report.results.append(res)
        report.systems[path] = {k: v for k, (v, _) in metrics.items()}
        lines = [SYSTEM_HEADER, f"# testing system : {path}", f"# number of test data : {res.nframes}"]
        lines += [*format_metrics(report.systems[path]), FOOTER]
        _emit(lines, report, log)
        if detail_file is not None:
            write_details(detail_file, res, append=index > 0)
    report.weighted = weighted_average(per_system)
    lines = [AVERAGE_HEADER, f"# number of systems : {len(systems)}", *format_metrics(report.weighted), FOOTER]
    _emit(lines, report, log)
    return report


def _emit(lines: list[str], report: TestReport, log: Callable[[str], None]) -> None:
    for line in lines:
        log(line)
    report.lines += lines


def select_frames(nframes: int, numb_test: int, rng: np.random.RandomState | None) -> np.ndarray:
    """Indices of the tested frames: all, or a permutation from `rng`, cut to `numb_test` (0 = all)."""
    index = np.arange(nframes)
    if rng is not None:
        rng.shuffle(index)  # what DeePMD-kit's shuffle_test does with its global random stream
    return index[:numb_test] if numb_test > 0 else index


def evaluate_system(model: EnergyModel, path: str, numb_test: int, rng: np.random.RandomState | None,
                atomic: bool, batch_frames: int) -> SystemResult:
    """Load one system in file atom order, select its frames and evaluate the model on them."""
    system = load_system(path, type_map=model.type_map, sort_atoms=False)
    if atomic and not system.find["atom_ener"]:
        raise DataError(f"{path}: atom_ener.npy is required to test atomic energies (atomic=True)")
    frames = select_frames(system.nframes, numb_test, rng)
    box = None if system.box is None else system.box[frames]
    pred = evaluate_frames(model, system.coord[frames], system.atype, box, batch_frames)
    data = {key: system.labels[key][frames] for key in ("energy", "force", "virial", "atom_pref", "atom_ener")}
    volume = None if box is None else np.abs(np.linalg.det(box))
    return SystemResult(path, system.natoms, system.box is not None, dict(system.find), data, pred, volume)


def evaluate_frames(model: EnergyModel, coord: np.ndarray, atype: np.ndarray, box: np.ndarray | None,
                    batch_frames: int) -> dict[str, np.ndarray]:
    """Model predictions for frames of one system through the inference engine (`deeppot.infer.Evaluator`: the
    fused kernels on a GPU, chunked by atoms), at most `batch_frames` frames a batch.

    coord (nf, natoms, 3) Å, atype (natoms,), box (nf, 3, 3) or None. Returns energy (nf,), force
    (nf, natoms, 3), virial (nf, 9), atom_energy (nf, natoms) as float64 arrays.
    """
    if batch_frames < 1:
        raise ValueError(f"batch_frames must be >= 1, got {batch_frames}")
    device = next(model.parameters()).device
    evaluator = Evaluator(model, device, batch_atoms=batch_frames * len(atype))
    as_tensor = lambda a, dtype: torch.as_tensor(a, dtype=dtype)  # noqa: E731  (on the host: `Evaluator.evaluate`
    nf = coord.shape[0]  # copies each batch, and plans from the host's copy without a sync)
    out = evaluator.evaluate(as_tensor(coord, torch.float64), as_tensor(atype, torch.long).expand(nf, -1),
                             None if box is None else as_tensor(box, torch.float64))
    return {k: out[k].cpu().numpy() for k in ("energy", "force", "virial", "atom_energy")}


def error_stat(pred: np.ndarray, ref: np.ndarray, scale: float = 1.0) -> dict[str, Metric]:
    """MAE and RMSE over all elements of pred - ref, times `scale`, each weighted by the element count."""
    diff = pred - ref
    weight = float(diff.size)
    return {"mae": (float(np.mean(np.abs(diff))) * scale, weight),
            "rmse": (float(np.sqrt(np.mean(diff * diff))) * scale, weight)}


def weighted_error_stat(pred: np.ndarray, ref: np.ndarray, weight: np.ndarray) -> dict[str, Metric]:
    """MAE and RMSE weighted per element by `weight` (same shape as pred), carrying the weight sum."""
    diff = pred - ref
    total = float(np.sum(weight))
    if total <= 0.0:
        return {"mae": (0.0, total), "rmse": (0.0, total)}
    return {"mae": (float(np.sum(np.abs(diff) * weight) / total), total),
            "rmse": (float(np.sqrt(np.sum(diff * diff * weight) / total)), total)}


def system_metrics(res: SystemResult, atomic: bool = False) -> dict[str, Metric]:
    """Metrics of one system as (value, weight) pairs; a label that is absent gives no metric."""
    groups: dict[str, dict[str, Metric]] = {}
    data, pred, find = res.data, res.pred, res.find
    if find["energy"]:
        groups["e"] = error_stat(pred["energy"], data["energy"])
        groups["e_per_atom"] = error_stat(pred["energy"], data["energy"], 1.0 / res.natoms)
    if find["force"]:
        groups["f"] = error_stat(pred["force"], data["force"])
        if find["atom_pref"]:
            weight = np.broadcast_to(data["atom_pref"][..., None], data["force"].shape)  # one weight per atom
            groups["fw"] = weighted_error_stat(pred["force"], data["force"], weight)
    if find["virial"] and res.periodic:  # DeePMD-kit ignores virial labels of non-periodic systems
        groups["v"] = error_stat(pred["virial"], data["virial"])
        groups["v_per_atom"] = error_stat(pred["virial"], data["virial"], 1.0 / res.natoms)
        if res.volume is not None:
            groups["s"] = error_stat(stress(pred["virial"], res.volume), stress(data["virial"], res.volume))
    if atomic:
        groups["ae"] = error_stat(pred["atom_energy"], data["atom_ener"])
    return {f"{kind}_{name}": stat for name, group in groups.items() for kind, stat in group.items()}


def stress(virial: np.ndarray, volume: np.ndarray) -> np.ndarray:
    """-virial / volume (nf, 9) in eV/Å^3, frame by frame: the tensile-positive stress DeePMD-kit 3.2 reports."""
    return -virial.reshape(-1, 9) / volume[:, None]


def weighted_average(per_system: Sequence[dict[str, Metric]]) -> dict[str, float]:
    """Combine systems: MAE as the weighted mean, RMSE as sqrt(Σ RMSE² w / Σ w) (DeePMD's weighted_average)."""
    sums: dict[str, float] = {}
    weights: dict[str, float] = {}
    for metrics in per_system:
        for key, (value, weight) in metrics.items():
            if key in PER_SYSTEM_ONLY:
                continue
            term = value * value if key.startswith("rmse") else value
            sums[key] = sums.get(key, 0.0) + term * weight
            weights[key] = weights.get(key, 0.0) + weight
    average = {key: sums[key] / weights[key] if weights[key] > 0 else 0.0 for key in sums}
    return {key: float(np.sqrt(v)) if key.startswith("rmse") else v for key, v in average.items()}


def format_metrics(metrics: dict[str, float]) -> list[str]:
    """Report lines (`Energy MAE         : %e eV`, ...) of the metrics present, in DeePMD-kit's order."""
    return [f"{label}: {metrics[key]:e} {unit}" for key, label, unit in REPORT_LINES if key in metrics]


def write_details(prefix: str | Path, res: SystemResult, append: bool) -> None:
    """Write (or append) one system's detail files; rows per frame (per atom for `.f.out`), file atom order.

    Unlabelled quantities are written as their zeros, like DeePMD-kit. The header `<system>: <columns>` is
    written only into an empty file, so a multi-system file has it once (DeePMD-kit 3.2).
    """
    prefix = Path(prefix)
    n = res.natoms
    energy = np.stack([res.data["energy"], res.pred["energy"]], axis=1)  # (nf, 2)
    force = np.concatenate([res.data["force"].reshape(-1, 3), res.pred["force"].reshape(-1, 3)], axis=1)
    virial = np.concatenate([res.data["virial"].reshape(-1, 9), res.pred["virial"].reshape(-1, 9)], axis=1)
    v_cols = " ".join([f"data_{c}" for c in VIRIAL_NAMES] + [f"pred_{c}" for c in VIRIAL_NAMES])
    tables = {
        ".e.out": (energy, "data_e pred_e"),
        ".e_peratom.out": (energy / n, "data_e pred_e"),
        ".f.out": (force, "data_fx data_fy data_fz pred_fx pred_fy pred_fz"),
        ".v.out": (virial, v_cols),
        ".v_peratom.out": (virial / n, v_cols),
    }
    for suffix, (table, columns) in tables.items():
        _save_table(prefix.with_suffix(suffix), table, f"{res.path}: {columns}", append)
    if res.find["virial"] and res.volume is not None:  # DeePMD-kit 3.2 writes the stress where it reports it
        s_cols = " ".join([f"data_s{c[1:]}" for c in VIRIAL_NAMES] + [f"pred_s{c[1:]}" for c in VIRIAL_NAMES])
        table = np.concatenate([stress(res.data["virial"], res.volume), stress(res.pred["virial"], res.volume)], 1)
        _save_table(prefix.with_suffix(".s.out"), table, f"{res.path} (eV/Å³): {s_cols}", append)


def _save_table(file: Path, table: np.ndarray, header: str, append: bool) -> None:
    if append and file.is_file() and os.path.getsize(file) > 0:
        header = ""  # savetxt writes no header line for an empty header
    with file.open("ab" if append else "wb") as stream:
        np.savetxt(stream, table, header=header, encoding="utf-8")  # the stress header has Å³
