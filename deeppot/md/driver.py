"""`deeppot md`: options -> models, structure, potential, integrator, writers -> `engine.run`. The command line
(`deeppot.cli.main`) only parses arguments into `MDOptions` and calls `run_md`."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import torch

from deeppot.infer.deep_pot import default_device
from deeppot.md.engine import init, run
from deeppot.md.files import (
    ModelDeviWriter,
    ProgressLogger,
    RestartWriter,
    ThermoWriter,
    TrajectoryWriter,
    load_restart,
    read_restart,
    read_structure,
    save_restart,
)
from deeppot.md.integrators import BussiNVT, LangevinNVT, StochasticCellRescaling, VelocityVerlet
from deeppot.md.potential import DeepPotential, atom_types
from deeppot.md.state import MDState

__all__ = ["MDOptions", "make_integrator", "run_md"]

log = logging.getLogger(__name__)

_DTYPES = {"float32": torch.float32, "float64": torch.float64}


@dataclass
class MDOptions:
    """The options of `deeppot md` (units: K, bar, fs, Å)."""

    models: list[str]
    structure: str | None = None  # not needed with `restart`
    output: Path = Path(".")
    ensemble: str = "nve"  # nve | nvt | npt
    thermostat: str = "bussi"  # bussi | langevin (nvt and npt)
    barostat: str = "iso"  # iso | aniso (npt)
    temperature: float = 300.0
    pressure: float = 1.0
    dt: float = 0.5
    steps: int = 1000
    thermo: int = 100
    dump: int = 1000
    seed: int = 0
    skin: float = 2.0
    tau_t: float = 100.0  # fs
    tau_p: float = 1000.0  # fs
    compressibility: float = 4.5e-5  # 1/bar (water)
    devi_freq: int | None = None  # default: the thermo interval, when there are several models
    device: str | None = None
    restart: str | None = None
    fmt: str | None = None  # ASE format of the structure file, when its name does not tell
    max_temperature: float | None = None
    precision: str | None = None  # float32 | float64: run the models in it (default: as they were trained)
    graph: str = "auto"  # CUDA graphs: auto (small systems on a GPU), on, off (`DeepPotential(graph=...)`)
    tf32: bool = False  # float32 models' GEMMs on TF32 tensor cores (`deeppot.infer.Evaluator(tf32=True)`)


GRAPH_CHOICES = {"auto": None, "on": True, "off": False}


def make_integrator(opts: MDOptions) -> VelocityVerlet | StochasticCellRescaling:
    if opts.ensemble == "nve":
        return VelocityVerlet(opts.dt)
    thermostats = {"bussi": BussiNVT, "langevin": LangevinNVT}
    if opts.thermostat not in thermostats:
        raise ValueError(f"unknown thermostat {opts.thermostat!r}: expected one of {sorted(thermostats)}")
    thermostat = thermostats[opts.thermostat](opts.dt, opts.temperature, opts.tau_t)
    if opts.ensemble == "nvt":
        return thermostat
    if opts.ensemble == "npt":
        if opts.barostat not in ("iso", "aniso"):
            raise ValueError(f"unknown barostat {opts.barostat!r}: expected iso or aniso")
        return StochasticCellRescaling(thermostat, opts.pressure, opts.tau_p, opts.compressibility,
                                       anisotropic=opts.barostat == "aniso")
    raise ValueError(f"unknown ensemble {opts.ensemble!r}: expected nve, nvt or npt")


def run_md(opts: MDOptions) -> MDState:
    """Run the MD of `opts`, writing thermo.out, traj.extxyz, restart.pt [and model_devi.out] into opts.output."""
    from deeppot.io import cast_model, load_model

    if opts.steps < 0 or opts.thermo < 1 or opts.dump < 1:
        raise ValueError(f"need --steps >= 0, --thermo >= 1 and --dump >= 1; got {opts.steps}, {opts.thermo}, "
                         f"{opts.dump}")
    if len(opts.models) == 1 and opts.devi_freq is not None:
        log.warning("--devi-freq needs several models (-m A.dp B.dp ...); no model deviation is written")
    integrator = make_integrator(opts)
    models = [load_model(m) for m in opts.models]
    if opts.precision is not None:  # e.g. a float64-trained model in float32: 2-3x the speed at scale
        models = [m if m.descriptor.dtype == _DTYPES[opts.precision] else cast_model(m, opts.precision) for m in models]
        log.info("models run in %s (--precision)", opts.precision)
    check_tf32(opts, models)
    out = Path(opts.output)
    out.mkdir(parents=True, exist_ok=True)
    state, potential = _start(opts, models)
    log.info("MD: %d atoms, %s, dt %g fs, %d steps from step %d, device %s", state.natoms, integrator.name,
             integrator.dt, opts.steps, state.step, potential.device)
    callbacks, devi = _writers(opts, out, potential, integrator, state)
    try:
        run(state, potential, integrator, opts.steps, callbacks, opts.max_temperature)
    finally:
        if devi is not None:
            devi.flush()
    save_restart(out / "restart.pt", state, potential, integrator.settings())
    log.info("MD done at step %d: %d neighbour-list builds", state.step, potential.rebuilds)
    return state


def check_tf32(opts: MDOptions, models: list) -> None:
    """--tf32 rounds the GEMM inputs of float32 models on a GPU's tensor cores; anywhere else it would silently
    change nothing, so it is refused."""
    if not opts.tf32:
        return
    wide = [name for name, m in zip(opts.models, models, strict=True) if m.descriptor.dtype != torch.float32]
    if wide:
        raise ValueError(f"--tf32 needs float32 models; {', '.join(wide)} run(s) in float64 (add --precision "
                         f"float32 to cast them)")
    if (torch.device(opts.device) if opts.device else default_device()).type != "cuda":
        raise ValueError("--tf32 applies to a GPU's tensor cores; this run is on the CPU")
    log.info("--tf32: the models' float32 GEMMs run on TF32 tensor cores (inputs rounded to 10 mantissa bits)")


def _start(opts: MDOptions, models: list) -> tuple[MDState, DeepPotential]:
    """The state (from the structure, or the restart file) and the potential on the same atoms."""
    type_map = list(models[0].type_map)
    if opts.restart:
        data = read_restart(opts.restart)
        atype = atom_types(data["symbols"], type_map)  # from the names: the models may order their types otherwise
        data["atype"] = atype
        potential = DeepPotential(models, atype, opts.skin, opts.device, graph=GRAPH_CHOICES[opts.graph],
                                  tf32=opts.tf32)
        return load_restart(data, potential, make_integrator(opts).settings()), potential
    if opts.structure is None:
        raise ValueError("a structure (-c) or a restart file (--restart) is needed")
    atoms = read_structure(opts.structure, type_map, opts.fmt)
    potential = DeepPotential.for_atoms(models, atoms, opts.skin, opts.device, graph=GRAPH_CHOICES[opts.graph],
                                        tf32=opts.tf32)
    return init(atoms, potential, opts.temperature, opts.seed), potential


def _writers(opts: MDOptions, out: Path, potential: DeepPotential, integrator, state: MDState) -> tuple[list, object]:
    append = opts.restart is not None
    callbacks = [ThermoWriter(out / "thermo.out", opts.thermo, append),
                 TrajectoryWriter(out / "traj.extxyz", opts.dump, append),
                 RestartWriter(out / "restart.pt", opts.dump, potential, integrator.settings()),
                 ProgressLogger(opts.thermo, state.step + opts.steps, state.natoms)]
    devi = None
    if len(potential.evaluators) > 1:
        devi = ModelDeviWriter(out / "model_devi.out", opts.devi_freq or opts.thermo, potential, append)
        callbacks.append(devi)
    return callbacks, devi
