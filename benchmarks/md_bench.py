"""MD throughput: NVT (Bussi, 300 K, dt 0.5 fs, skin 2 Å) of water boxes with the water example's model shape.

The 192-atom frame 0 of examples/water/data/data_0 replicated to about each --sizes atom count (as
benchmarks/nlist_bench.py does). The model is the water example's (se_e2_a, rcut 6, sel [46, 92]) with random
weights in --dtype unless --model gives a trained one (random weights move the atoms unphysically, so the rebuild
count is not that of real water; the cost of a step is). Prints one JSON line per case:
  case "water:<dtype>:<atoms>", atoms, atom_steps_per_s, ms_per_step (mean over --steps after --warmup steps,
  synchronised), rebuilds (neighbour-list builds in the timed steps), replays (segments run twice because a
  rebuild was due), evaluations (model evaluations in the timed steps: steps + replayed + discarded ones),
  eval_ms (median of 5 synchronised evaluations of the final neighbour list alone, in the same process) and
  overhead (ms_per_step / eval_ms - 1: what the MD loop adds to the evaluation; eval_ms is the eager
  evaluation, also where the run replays it from a CUDA graph, "graph": true), peak_mem_MiB
  (torch.cuda.max_memory_allocated on a GPU; the process's peak RSS on a CPU), device.
With --profile DIR, torch.profiler's table of 5 further MD steps goes to DIR/md_profile_<case>.txt.

With --devi N, instead of MD: the model deviation of N models of that shape (each its own random weights, or
--model N times) at one configuration, as `deeppot md --devi-freq` computes it at its devi steps
(`DeepPotential.deviation`: every model on the step's neighbour list, the columns back on the host). One line per
path, case "water:<dtype>:devi<N>", "path" "sequential" (model after model, each on its own fast path) or
"batched" (one stacked call, deeppot/infer/ensemble.py); ms_per_step is the mean time of one deviation over
--steps calls after --warmup calls (ms_min the fastest; the two paths' calls alternate; peak_mem_MiB is of both).

    python benchmarks/md_bench.py [--device cuda] [--sizes 192 1536 12288] [--dtype float32 float64]
        [--steps 100] [--warmup 20] [--model model.dp] [--compress] [--tf32] [--sorted-nlist] [--devi 4]
        [--ase deeppot|deepmd [--peer-model model.pth]]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

import numpy as np
import torch
from ase import Atoms
from nlist_bench import peak_mib, start_case, sync, water_box

from deeppot import md
from deeppot.model import EnergyModel

INPUT = Path(__file__).resolve().parents[1] / "examples" / "water" / "input.json"


def water_model(dtype: str, path: str | None, seed: int | None = None) -> EnergyModel:
    if path is not None:
        from deeppot.io import load_model

        return load_model(path)
    config = json.loads(INPUT.read_text())["model"]
    for section in ("descriptor", "fitting_net"):
        config[section]["precision"] = dtype
        if seed is not None:  # the models of a deviation ensemble differ
            config[section]["seed"] = seed
    return EnergyModel.from_config(config)


def water_atoms(natoms: int) -> Atoms:
    coord, atype, box = water_box(natoms, torch.device("cpu"), torch.float64)
    return Atoms([("O", "H")[t] for t in atype[0].tolist()], positions=coord[0].numpy(), cell=box[0].numpy(),
                 pbc=True)


def timed(device: torch.device, work) -> float:
    """Seconds of work(), the device synchronised before and after."""
    sync(device)
    start = time.perf_counter()
    work()
    sync(device)
    return time.perf_counter() - start


def bench(natoms: int, dtype: str, args: argparse.Namespace) -> dict:
    device = torch.device(args.device)
    start_case(device)
    model = water_model(dtype, args.model)
    atoms = water_atoms(natoms)
    if args.compress:
        compress_for(model, atoms)
    potential = md.DeepPotential([model], md.atom_types(atoms.get_chemical_symbols(), model.type_map),
                                 skin=args.skin, device=device, sort_neighbors=args.sorted_nlist,
                                 graph={"auto": None, "on": True, "eval": True, "off": False}[args.graph],
                                 tf32=args.tf32)
    state = md.init(atoms, potential, temperature=300.0, seed=0)
    integrator = md.BussiNVT(dt=args.dt, temperature=300.0, tau=100.0)
    stepper = md.Stepper(potential, graphs=args.graph != "eval")
    md.run(state, potential, integrator, args.warmup, max_temperature=math.inf, stepper=stepper)
    builds, replays, evaluations = potential.rebuilds, stepper.replays, potential.evaluations
    seconds = timed(device, lambda: md.run(state, potential, integrator, args.steps, max_temperature=math.inf,
                                           stepper=stepper))
    counts = {"rebuilds": potential.rebuilds - builds, "replays": stepper.replays - replays,
              "evaluations": potential.evaluations - evaluations}
    suffix = (":compressed" if args.compress else "") + (":sorted" if args.sorted_nlist else "")
    suffix += ":tf32" if args.tf32 else ""
    suffix += {"auto": "", "on": ":graph", "eval": ":graph-eval", "off": ":eager"}[args.graph]
    case = f"water:{dtype}:{len(atoms)}{suffix}"
    eval_ms = 1e3 * statistics.median(timed(device, lambda: potential.evaluators[0].evaluate_neighbors(
        potential.flat)) for _ in range(5))
    if args.profile:
        profile(case, lambda: md.run(state, potential, integrator, 5, max_temperature=math.inf, stepper=stepper),
                Path(args.profile))
    ms_per_step = 1e3 * seconds / args.steps
    return {"case": case, "atoms": len(atoms), "atom_steps_per_s": round(len(atoms) * args.steps / seconds, 1),
            "ms_per_step": round(ms_per_step, 3), **counts, "eval_ms": round(eval_ms, 3),
            "overhead": round(ms_per_step / eval_ms - 1, 3), "graph": potential.graphed is not None,
            "step_graph": stepper.graph is not None,
            "peak_mem_MiB": peak_mib(device), "device": str(device)}


def profile(case: str, work, folder: Path) -> None:
    """torch.profiler's operator table of work() (CPU and CUDA times) to folder/md_profile_<case>.txt."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        work()
        torch.cuda.synchronize() if torch.cuda.is_available() else None
    key = "cuda_time_total" if torch.cuda.is_available() else "cpu_time_total"
    folder.mkdir(parents=True, exist_ok=True)
    table = prof.key_averages().table(sort_by=key, row_limit=40, max_name_column_width=70)
    (folder / f"md_profile_{case.replace(':', '_')}.txt").write_text(table)


def ase_calculator(kind: str, model: EnergyModel, device: torch.device, peer_model: str | None):
    """deeppot's ASE calculator on the model, or DeePMD-kit's (`deepmd.calculator.DP`) on --peer-model, a file
    DeePMD-kit evaluates with forces (e.g. the .pth that `dp convert-backend model.dp model.pth` writes)."""
    if kind == "deeppot":
        from deeppot.calculator import DP

        return DP(model=model, device=device)
    if peer_model is None:
        raise SystemExit("--ase deepmd needs --peer-model (a model file DeePMD-kit evaluates with forces)")
    from deepmd.calculator import DP

    return DP(model=peer_model)


def bench_ase(natoms: int, dtype: str, args: argparse.Namespace) -> dict:
    """The same NVT run driven by ASE (`ase.md.bussi.Bussi`, one model call per step from Python, positions and
    forces through the host): the speed a user of an ASE calculator gets."""
    from ase import units
    from ase.md.bussi import Bussi
    from ase.md.velocitydistribution import MaxwellBoltzmannDistribution

    device = torch.device(args.device)
    start_case(device)
    atoms = water_atoms(natoms)
    atoms.calc = ase_calculator(args.ase, water_model(dtype, args.model), device, args.peer_model)
    MaxwellBoltzmannDistribution(atoms, temperature_K=300.0, rng=np.random.default_rng(0))
    dyn = Bussi(atoms, args.dt * units.fs, temperature_K=300.0, taut=100.0 * units.fs, rng=np.random.default_rng(0))
    dyn.run(args.warmup)
    seconds = timed(device, lambda: dyn.run(args.steps))
    return {"case": f"water:{dtype}:{len(atoms)}:ase", "tool": "deeppot" if args.ase == "deeppot" else "deepmd-kit",
            "atoms": len(atoms), "atom_steps_per_s": round(len(atoms) * args.steps / seconds, 1),
            "ms_per_step": round(1e3 * seconds / args.steps, 3), "peak_mem_MiB": peak_mib(device),
            "device": str(device)}


def compress_for(model: EnergyModel, atoms: Atoms) -> None:
    """Tabulate the model as `deeppot compress` does (step 0.01, extrapolate 5), its table range from the closest
    pair of this box when the model does not record a min_nbor_dist (random weights)."""
    from deeppot.io.compress import compress_model

    if not float(model.min_nbor_dist) > 0:
        model.min_nbor_dist.fill_(float(atoms.get_all_distances(mic=True)[np.triu_indices(len(atoms), 1)].min()))
    compress_model(model)


def bench_devi(natoms: int, dtype: str, args: argparse.Namespace) -> list[dict]:
    """The time of one `DeepPotential.deviation` of args.devi models, model after model and batched. The two
    paths' calls alternate, so that a change of load on a shared machine hits both alike."""
    device = torch.device(args.device)
    models = [water_model(dtype, args.model, seed=k) for k in range(args.devi)]
    atoms = water_atoms(natoms)
    atype = md.atom_types(atoms.get_chemical_symbols(), models[0].type_map)
    positions, cell = (torch.tensor(a, device=device) for a in (atoms.positions, atoms.cell.array))
    start_case(device)
    paths = {}
    for path in ("sequential", "batched"):
        paths[path] = md.DeepPotential(models, atype, skin=args.skin, device=device, batched=path == "batched")
        paths[path].compute(positions, cell, rebuild=True)
    times = {path: [] for path in paths}
    for i in range(args.warmup + args.steps):
        for path, potential in paths.items():
            start = time.perf_counter()
            potential.deviation()  # ends with a host read, so every call is synchronised
            if i >= args.warmup:
                times[path].append(time.perf_counter() - start)
    return [{"case": f"water:{dtype}:devi{args.devi}", "path": path, "atoms": len(atoms), "models": args.devi,
             "ms_per_step": round(1e3 * sum(t) / len(t), 3), "ms_min": round(1e3 * min(t), 3),
             "peak_mem_MiB": peak_mib(device), "device": str(device), "threads": torch.get_num_threads()}
            for path, t in times.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--dtype", nargs="+", default=["float32", "float64"], choices=["float32", "float64"])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--dt", type=float, default=0.5)
    parser.add_argument("--skin", type=float, default=2.0)
    parser.add_argument("--model", default=None, help="a trained model file instead of random weights")
    parser.add_argument("--compress", action="store_true",
                        help="run MD with the compressed model (case water:<dtype>:<atoms>:compressed)")
    parser.add_argument("--ase", choices=["deeppot", "deepmd"], default=None,
                        help="drive the NVT run with ASE and this tool's calculator (case water:<dtype>:<atoms>:ase)")
    parser.add_argument("--peer-model", default=None, help="with --ase deepmd: the model file DeePMD-kit loads")
    parser.add_argument("--sorted-nlist", action="store_true",
                        help="sort each neighbour row by distance at every step (DeePMD's slot order; case suffix "
                             ":sorted) instead of the unsorted update MD uses")
    parser.add_argument("--graph", choices=["auto", "on", "eval", "off"], default="auto",
                        help="replay the MD step (on) or only the evaluation (eval) from CUDA graphs, or neither "
                             "(off); auto: the step, up to 20,000 atoms on a GPU (case suffix :graph, :graph-eval, "
                             ":eager when not auto)")
    parser.add_argument("--tf32", action="store_true", help="the mixed-precision opt-in (float32 GEMMs on TF32)")
    parser.add_argument("--profile", metavar="DIR", help="write torch.profiler's table of 5 more steps per case")
    parser.add_argument("--devi", type=int, default=0, metavar="N",
                        help="time the model deviation of N models (sequential and batched) instead of MD")
    args = parser.parse_args()
    sizes = args.sizes or ([192, 1536] if args.device == "cpu" else [1536, 12288, 98304])
    for dtype in args.dtype:
        for natoms in sizes:
            if args.devi:
                rows = bench_devi(natoms, dtype, args)
            else:
                rows = [bench_ase(natoms, dtype, args) if args.ase else bench(natoms, dtype, args)]
            for row in rows:
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
