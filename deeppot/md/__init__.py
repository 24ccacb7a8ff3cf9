"""Molecular dynamics with Deep Potentials: velocity Verlet on the device, NVE / NVT (Bussi, Langevin BAOAB) /
NPT (stochastic cell rescaling), a Verlet-skin neighbour list rebuilt only when needed, restart files that
continue bit for bit, and model deviation of an ensemble during the run. Needs ASE. Units: `deeppot.md.units`.

    from deeppot import md
    potential = md.DeepPotential.for_atoms(["model.dp"], atoms, skin=2.0)  # first model drives; all: deviation
    state = md.init(atoms, potential, temperature=300, seed=1)
    md.run(state, potential, md.BussiNVT(dt=0.5, temperature=300), steps=1000,
           callbacks=[md.ThermoWriter("thermo.out", every=100), md.TrajectoryWriter("traj.extxyz", every=100)])

`infer`, `model` and the trainer do not import this package.
"""

from deeppot.md.engine import Callback, MDError, Stepper, init, run
from deeppot.md.files import (
    ModelDeviWriter,
    ProgressLogger,
    RestartWriter,
    ThermoWriter,
    TrajectoryWriter,
    load_restart,
    read_structure,
    save_restart,
    to_atoms,
)
from deeppot.md.integrators import BussiNVT, LangevinNVT, StochasticCellRescaling, VelocityVerlet
from deeppot.md.potential import DeepPotential, Potential, atom_types
from deeppot.md.state import MDState, Thermo, thermo

__all__ = ["BussiNVT", "Callback", "DeepPotential", "LangevinNVT", "MDError", "MDState", "ModelDeviWriter",
           "Potential", "ProgressLogger", "RestartWriter", "Stepper", "StochasticCellRescaling", "Thermo",
           "ThermoWriter", "TrajectoryWriter", "VelocityVerlet", "atom_types", "init", "load_restart",
           "read_structure", "run", "save_restart", "thermo", "to_atoms"]
