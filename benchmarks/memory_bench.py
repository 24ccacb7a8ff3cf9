"""Memory benchmark of the training options for large frames (docs/memory.md): one JSON line per case.

The 192-atom water frame of examples/water (data_0, frame 0) is replicated r x r x r times (r = 2, 4, 8: 1,536,
12,288 and 98,304 atoms; energy x r^3, forces tiled, so the labels are exact) and written as a one-frame DeePMD
system; the model is examples/water's (sel [46, 92], embedding [25, 50, 100], fitting 3 x 240) in the given
precision. Each case trains in its own process: `--warmup` steps, then `--steps` timed steps (batch 1, the eager
step for every case, so that the options are compared on one path; on a GPU the fused Triton embedding kernels
except with bf16, which runs the PyTorch embedding; no validation).

    python benchmarks/memory_bench.py --atoms 12288 98304 --precision float32 \\
        --techniques plain checkpoint chunk4096 checkpoint+chunk4096 bf16 checkpoint+chunk4096+bf16     # GPU
    python benchmarks/memory_bench.py --atoms 98304 --memory-gib 80 --techniques plain checkpoint+chunk4096  # H100 cap
    OMP_NUM_THREADS=1 python benchmarks/memory_bench.py --device cpu --atoms 1536 --steps 2                # CPU

A technique is `plain` or '+'-joined parts: `checkpoint` (activation_checkpointing), `chunkN` (atom_chunk N),
`bf16` (mixed_precision, float32 only). Each line: `case` (water:PRECISION:ATOMS:TECHNIQUE), `peak_mem_MiB`
(torch.cuda.max_memory_allocated over the steps on CUDA; the process's peak RSS on CPU, with the RSS peak before
the first step as `rss_before_steps_MiB`), `ms_per_step` (median), `loss` of the last step, and `oom` where CUDA ran
out of memory (building the trainer or stepping it: `oom_at`). Every line also carries `natoms`, `device`,
`device_name` (the GPU's name, the CPU's on CPU) and `memory_cap_GiB`: with --memory-gib G, each CUDA child caps
its allocator at G GiB (torch.cuda.set_per_process_memory_fraction, set before the trainer is built), so that a
141 GiB H200 shows what an 80 GiB H100 allows (null: no cap). On CPU the children run with
MALLOC_MMAP_THRESHOLD_=65536 (unless set): glibc then returns every freed tensor to the OS, so the peak RSS
follows the live tensors instead of the allocator's cache (it makes the steps slower: CPU ms_per_step are not
speeds to quote). ZeRO-1 (a multi-rank option) is not measured here: see
docs/memory.md for what it saves.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
WATER = ROOT / "examples" / "water"


def replicated_system(r: int, folder: Path) -> Path:
    """data_0's first frame repeated r x r x r times, written as a one-frame DeePMD system in folder."""
    src = WATER / "data" / "data_0"
    coord = np.load(src / "set.000/coord.npy")[0].reshape(-1, 3)
    box = np.load(src / "set.000/box.npy")[0].reshape(3, 3)
    force = np.load(src / "set.000/force.npy")[0].reshape(-1, 3)
    energy = float(np.load(src / "set.000/energy.npy")[0])
    atype = np.loadtxt(src / "type.raw", dtype=np.int64, ndmin=1)
    shifts = np.array([[i, j, k] for i in range(r) for j in range(r) for k in range(r)], dtype=float) @ box
    out = folder / f"water_{len(atype) * r**3}"
    (out / "set.000").mkdir(parents=True, exist_ok=True)
    np.savetxt(out / "type.raw", np.tile(atype, r**3), fmt="%d")
    (out / "type_map.raw").write_text((src / "type_map.raw").read_text())
    np.save(out / "set.000/coord.npy", (coord[None] + shifts[:, None]).reshape(1, -1))
    np.save(out / "set.000/box.npy", (box * r).reshape(1, 9))
    np.save(out / "set.000/force.npy", np.tile(force, (r**3, 1)).reshape(1, -1))
    np.save(out / "set.000/energy.npy", np.array([energy * r**3]))
    return out


def training_keys(technique: str) -> dict:
    """The training keys of a technique such as 'checkpoint+chunk4096+bf16'."""
    keys: dict = {}
    for part in technique.split("+"):
        if part == "checkpoint":
            keys["activation_checkpointing"] = True
        elif part.startswith("chunk"):
            keys["atom_chunk"] = int(part[len("chunk"):])
        elif part == "bf16":
            keys["mixed_precision"] = {"output_prec": "float32", "compute_prec": "bfloat16"}
        elif part != "plain":
            raise ValueError(f"unknown technique part {part!r} (plain, checkpoint, chunkN, bf16)")
    return keys


def make_config(system: Path, precision: str, technique: str, steps: int) -> dict:
    config = json.loads((WATER / "input.json").read_text())
    for part in ("descriptor", "fitting_net"):
        config["model"][part]["precision"] = precision
    config["model"]["data_stat_nbatch"] = 1
    config["training"] = {"training_data": {"systems": [str(system)], "batch_size": 1}, "numb_steps": steps,
                          "seed": 1, "disp_freq": steps, "save_freq": steps, "disp_training": False,
                          "time_training": False, **training_keys(technique)}
    return config


def peak_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def device_name(device) -> str:
    import torch

    return torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or platform.machine()


def cap_memory(device, gib: float | None) -> float | None:
    """Cap this process's CUDA allocator at gib GiB (None: no cap); the cap applied, None on the CPU."""
    import torch

    if gib is None or device.type != "cuda":
        return None
    total = torch.cuda.get_device_properties(device).total_memory
    if gib * 2**30 > total:
        raise ValueError(f"--memory-gib {gib}: more than the device's {total / 2**30:.1f} GiB")
    index = device.index if device.index is not None else torch.cuda.current_device()  # 'cuda' has no index
    torch.cuda.set_per_process_memory_fraction(gib * 2**30 / total, index)
    return gib


def build_trainer(args: argparse.Namespace, device, natoms: int, technique: str):
    from deeppot.config.input import normalize_input
    from deeppot.train.trainer import RunOptions, Trainer

    workdir = Path(tempfile.mkdtemp(prefix="memory-bench-"))
    system = replicated_system(round((natoms / 192) ** (1 / 3)), workdir)
    config = normalize_input(make_config(system, args.precision, technique, args.warmup + args.steps))
    # the fused kernels forced: the start-up timing of both embeddings would cost a dozen passes of a large frame
    return Trainer(config, RunOptions(workdir=workdir, device=device, skip_neighbor_stat=True, progress=False,
                                      cuda_graph=False, fused_kernels=True))


def run_case(args: argparse.Namespace) -> dict:
    """Inside the child process: build the trainer, step it, measure."""
    import torch

    natoms, technique = args.atoms[0], args.techniques[0]
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    base = {"case": f"water:{args.precision}:{natoms}:{technique}", "natoms": natoms, "device": str(device),
            "device_name": device_name(device)}
    print("DEVICE " + json.dumps(base), flush=True)  # for the parent's row should this process crash
    base["memory_cap_GiB"] = cap_memory(device, args.memory_gib)  # before the trainer allocates anything
    print("DEVICE " + json.dumps(base), flush=True)  # the cap applied (none on the CPU)
    cuda = device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    times, where = [], "build"
    try:  # an OOM while building (data statistics, model) is as much a result as one while stepping
        trainer = build_trainer(args, device, natoms, technique)
        rss_before = peak_rss_mib()
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        for step in range(args.warmup + args.steps):
            where = f"step {step}"
            t0 = time.perf_counter()
            metrics = trainer.step(step)
            sync()
            times.append(1e3 * (time.perf_counter() - t0))
    except torch.cuda.OutOfMemoryError:
        return {**base, "oom": True, "oom_at": where}
    row = {**base, "peak_mem_MiB": round(torch.cuda.max_memory_allocated() / 2**20 if cuda else peak_rss_mib(), 1),
           "ms_per_step": round(float(np.median(times[args.warmup:])), 1), "loss": float(metrics["rmse"])}
    if not cuda:
        row["rss_before_steps_MiB"] = round(rss_before, 1)
    return row


def run_child(args: argparse.Namespace, natoms: int, technique: str) -> str:
    """One case in a fresh process; its JSON line (an error row, with what is known, if it failed)."""
    cmd = [sys.executable, __file__, "--child", "--atoms", str(natoms), "--techniques", technique,
           "--precision", args.precision, "--steps", str(args.steps), "--warmup", str(args.warmup)]
    cmd += ["--device", args.device] if args.device else []
    cmd += ["--memory-gib", str(args.memory_gib)] if args.memory_gib is not None else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    if args.device == "cpu":  # freed tensors go back to the OS at once: peak RSS ~ the live-tensor peak
        env.setdefault("MALLOC_MMAP_THRESHOLD_", "65536")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = done.stdout.splitlines()
    rows = [line for line in lines if line.startswith("{")]
    if done.returncode == 0 and rows:
        return rows[-1]
    known = [json.loads(line[len("DEVICE "):]) for line in lines if line.startswith("DEVICE ")]
    row = known[-1] if known else {"case": f"water:{args.precision}:{natoms}:{technique}", "natoms": natoms,
                                   "device": args.device, "device_name": None}
    row.setdefault("memory_cap_GiB", args.memory_gib)  # the cap asked for, where the child never applied one
    return json.dumps({**row, "error": done.stderr[-500:]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--atoms", type=int, nargs="+", default=[12288, 98304],
                        help="192 r^3 atoms each (1536, 12288, 98304, ...)")
    parser.add_argument("--precision", default="float32", choices=["float32", "float64"])
    parser.add_argument("--techniques", nargs="+",
                        default=["plain", "checkpoint", "chunk4096", "checkpoint+chunk4096", "bf16"])
    parser.add_argument("--steps", type=int, default=5, help="timed steps per case")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    parser.add_argument("--memory-gib", type=float, default=None,
                        help="CUDA: cap each case's usable GPU memory at this many GiB (default: no cap)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    for natoms in args.atoms:
        r = round((natoms / 192) ** (1 / 3))
        if 192 * r**3 != natoms:
            parser.error(f"--atoms {natoms}: not 192 r^3 (e.g. 1536, 12288, 98304)")
    if args.memory_gib is not None and args.memory_gib <= 0:
        parser.error("--memory-gib must be positive")
    if args.child:
        print(json.dumps(run_case(args)), flush=True)
        return
    for natoms in args.atoms:
        for technique in args.techniques:
            print(run_child(args, natoms, technique), flush=True)

if __name__ == "__main__":
    main()
