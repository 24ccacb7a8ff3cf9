"""What an MD run reads and writes: the starting structure, thermo.out, traj.extxyz, model_devi.out, the restart
file, and the progress line. The writers are callbacks of `deeppot.md.engine.run` (`every` steps)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import torch
from ase import Atoms
from ase.calculators.singlepoint import SinglePointCalculator

from deeppot.io.dp_file import atomic_write
from deeppot.md.potential import DeepPotential, Potential
from deeppot.md.state import MDState, Thermo
from deeppot.md.units import FS

__all__ = ["ModelDeviWriter", "ProgressLogger", "RestartWriter", "ThermoWriter", "TrajectoryWriter",
           "load_restart", "read_restart", "read_structure", "save_restart", "to_atoms"]

log = logging.getLogger(__name__)

RESTART_VERSION = 1
THERMO_COLUMNS = ("step", "time_fs", "temperature_K", "potential_eV", "kinetic_eV", "total_eV", "pressure_bar",
                  "volume_A3")


def read_structure(path: str | Path, type_map: list[str] | None = None, fmt: str | None = None) -> Atoms:
    """The starting structure: a DeePMD system folder (its first frame; names from type_map.raw, else the
    model's `type_map` by type index) or any file ASE reads (extxyz, POSCAR, LAMMPS data with fmt='lammps-data')."""
    path = Path(path)
    if path.is_dir():
        from deeppot.data import load_system

        system = load_system(path, type_map=type_map, sort_atoms=False)
        names = system.type_names or type_map
        if names is None:
            raise ValueError(f"{path}: no type_map.raw and no model type map to name the atom types")
        box = system.box
        return Atoms([names[t] for t in system.atype], positions=system.coord[0],
                     cell=None if box is None else box[0], pbc=box is not None)
    from ase.io import read

    return read(path, format=fmt, index=0)


def to_atoms(state: MDState, thermo: Thermo | None = None) -> Atoms:
    """The state as ASE atoms: positions wrapped into the cell, ASE velocities, forces and energy attached."""
    pos = state.positions.detach().cpu().numpy()
    cell = None if state.cell is None else state.cell.cpu().numpy()
    atoms = Atoms(state.symbols, positions=pos, cell=cell, pbc=cell is not None, masses=state.masses.cpu().numpy())
    if cell is not None:
        atoms.wrap()  # the state stays unwrapped; only the written frames are wrapped
    atoms.set_velocities(state.velocities.cpu().numpy() / FS)
    energy = float(state.energy) if thermo is None else thermo.potential
    atoms.calc = SinglePointCalculator(atoms, energy=energy, forces=state.forces.cpu().numpy())
    return atoms


class ThermoWriter:
    """thermo.out: one row of `THERMO_COLUMNS` every `every` steps under a '#' header (appended on restart)."""

    def __init__(self, path: str | Path, every: int, append: bool = False) -> None:
        self.every, self.path = every, Path(path)
        self.at_start = not append  # a restarted run does not repeat the row of its first step
        if not append or not self.path.exists():
            self.path.write_text("# " + " ".join(f"{c:>16s}" for c in THERMO_COLUMNS)[2:] + "\n")

    def __call__(self, state: MDState, thermo: Thermo) -> None:
        row = (f"{thermo.step:16d} {thermo.time_fs:16.4f} {thermo.temperature:16.6f} {thermo.potential:16.8f} "
               f"{thermo.kinetic:16.8f} {thermo.total:16.8f} {thermo.pressure:16.6f} {thermo.volume:16.6f}\n")
        with open(self.path, "a") as fp:
            fp.write(row)


class TrajectoryWriter:
    """traj.extxyz: a frame every `every` steps (wrapped positions, velocities, forces, energy), appended."""

    def __init__(self, path: str | Path, every: int, append: bool = False) -> None:
        self.every, self.path, self.at_start = every, Path(path), not append
        if not append:
            self.path.unlink(missing_ok=True)

    def __call__(self, state: MDState, thermo: Thermo) -> None:
        from ase.io import write

        write(self.path, to_atoms(state, thermo), format="extxyz", append=True)


class RestartWriter:
    """The restart file every `every` steps, written atomically (temp file in the same folder, then os.replace):
    a crash or an error never leaves a half-written or a bad restart."""

    def __init__(self, path: str | Path, every: int, potential: Potential, settings: dict) -> None:
        self.every, self.path, self.potential, self.settings = every, Path(path), potential, settings
        self.at_start = False

    def __call__(self, state: MDState, thermo: Thermo) -> None:
        save_restart(self.path, state, self.potential, self.settings)


def save_restart(path: str | Path, state: MDState, potential: Potential, settings: dict) -> None:
    """torch.save of everything a run needs to continue bit for bit: the state, the generator state, the
    neighbour list's build positions, and the integrator's settings (thermostat/barostat parameters)."""
    data = {"version": RESTART_VERSION, **{name: getattr(state, name) for name in MDState.MOVING},
            "masses": state.masses, "atype": state.atype, "symbols": state.symbols, "step": state.step,
            "rng": state.generator.get_state(), "nlist": potential.nlist_reference(), "integrator": settings}
    atomic_write(path, lambda tmp: torch.save(data, tmp))


def read_restart(path: str | Path) -> dict:
    """The dict `save_restart` wrote (ValueError if the file is not one)."""
    data = torch.load(path, map_location="cpu", weights_only=False)
    if not isinstance(data, dict) or data.get("version") != RESTART_VERSION:
        raise ValueError(f"{path}: not a deeppot MD restart file (version {RESTART_VERSION})")
    return data


def load_restart(restart: str | Path | dict, potential: Potential, settings: dict | None = None) -> MDState:
    """The state saved by `save_restart` (a path or `read_restart`'s dict) on the potential's device, with the
    neighbour list rebuilt where the saved run built it. Warns when the integrator settings differ from the saved."""
    data = restart if isinstance(restart, dict) else read_restart(restart)
    if settings is not None and settings != data["integrator"]:
        log.warning("restart: the integrator settings %s differ from the saved %s", settings, data["integrator"])
    dev = potential.device
    generator = torch.Generator(device=dev)
    generator.set_state(data["rng"])
    moving = {name: None if data[name] is None else data[name].to(dev) for name in MDState.MOVING}
    state = MDState(**moving, masses=data["masses"].to(dev), atype=data["atype"].to(dev), symbols=data["symbols"],
                    generator=generator, step=data["step"])
    potential.restore_nlist(data["nlist"])
    return state


class ModelDeviWriter:
    """DP-GEN's model_devi.out: the deviation of the models of a `DeepPotential` every `every` steps, on the
    neighbour data of the step. Rows are kept and appended with `deeppot.infer.model_devi.write_model_devi` by
    `flush` (at the end of a run, or when it stops), one header per run as DeePMD-kit writes."""

    def __init__(self, path: str | Path, every: int, potential: DeepPotential, append: bool = False) -> None:
        self.every, self.path, self.potential, self.at_start = every, Path(path), potential, not append
        self.rows: list[np.ndarray] = []
        if not append:
            self.path.unlink(missing_ok=True)

    def __call__(self, state: MDState, thermo: Thermo) -> None:
        self.rows.append(np.concatenate([[state.step], self.potential.deviation()]))

    def flush(self) -> None:
        from deeppot.infer.model_devi import write_model_devi

        if self.rows:
            write_model_devi(self.path, np.stack(self.rows))
            self.rows = []


class ProgressLogger:
    """A progress line every `every` steps: step, temperature, atom-steps per second and the time left."""

    def __init__(self, every: int, total_steps: int, natoms: int) -> None:
        self.every, self.end, self.natoms = every, total_steps, natoms
        self.at_start = False
        self.last: tuple[float, int] | None = None

    def __call__(self, state: MDState, thermo: Thermo) -> None:
        now = time.perf_counter()
        if self.last is None:  # the first interval includes start-up: measure from its end
            self.last = (now, thermo.step)
            log.info("step %d  T %.1f K  Etot %.6f eV", thermo.step, thermo.temperature, thermo.total)
            return
        wall, steps = now - self.last[0], thermo.step - self.last[1]
        rate = steps / wall if wall > 0 else float("inf")
        eta = (self.end - thermo.step) / rate if rate > 0 else float("nan")
        log.info("step %d  T %.1f K  Etot %.6f eV  %.4g atom-steps/s  ETA %s", thermo.step, thermo.temperature,
                 thermo.total, rate * self.natoms, _format_seconds(eta))
        self.last = (now, thermo.step)


def _format_seconds(seconds: float) -> str:
    if not np.isfinite(seconds):
        return "?"
    minutes, sec = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{sec:02d}"
