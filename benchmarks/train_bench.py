"""Training benchmark: one JSON line per case with ms/step, launch-to-first-step, wall time, peak memory, RMSEs,
atoms/s and an estimate of the model FLOP rate.

Usage (from the repository root, on a GPU machine):
    python benchmarks/train_bench.py --data ../shared/data --inputs ../shared/bench/inputs --steps 3000 \
        water:float64 water:float32 copper:float32 alloy:float32[:2000]
Each case runs in its own process, so the launch-to-first-step time includes Python start-up and imports.
A case is NAME:PRECISION[:STEPS][:eager][:compile][:plain|:fused][:tf32][:bsN][:odd][:frameN]:
the embedding net is chosen as `deeppot train` chooses it (timed at start-up) unless `plain` (PyTorch) or `fused`
(the Triton kernels) forces it; tf32: the kernels' mixed-precision opt-in; bsN: batch size N; odd: the shape a
new user tried (embedding [10, 20, 40], axis_neuron 8, sel [37, 61], batch 3); frameN: train on one water frame
replicated to N atoms (N = 192 r^3; benchmarks/memory_bench.py) instead of the input's data, no validation.
NAME picks <inputs>/<NAME>_se_e2_a.json, whose "DATA/" paths point at --data. ms/step is the median interval
between the starts of consecutive steps (CUDA events), display and checkpoint steps excluded; wall_ms_per_step is
the whole loop's wall time over its steps. model_tflops: 6 x the forward FLOPs of the embedding GEMMs, the R^T G
contraction and the fitting GEMMs per step (forward, forces, and the gradient of both: the factor that gives the
issue's ~3 GFLOP for a water step) over ms/step; mfu divides it by the H100/H200 dense peak of the arithmetic used
(float64 tensor cores 67 TFLOP/s; float32 3xTF32 495/3 TFLOP/s; tf32 495 TFLOP/s).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # memory_bench's replicated frames

T_LAUNCH_ENV = "DEEPPOT_BENCH_T_LAUNCH"


def parse_case(text: str) -> dict:
    parts = text.split(":")
    case = {"name": parts[0], "precision": parts[1], "steps": None, "graph": True, "compile": False,
            "fused": None, "tf32": False, "batch": None, "odd": False, "frame": None}
    flags = {"eager": ("graph", False), "compile": ("compile", True), "plain": ("fused", False),
             "fused": ("fused", True), "tf32": ("tf32", True), "odd": ("odd", True)}
    for p in parts[2:]:
        if p in flags:
            key, value = flags[p]
            case[key] = value
        elif p.startswith("bs"):
            case["batch"] = int(p[2:])
        elif p.startswith("frame"):
            case["frame"] = int(p[5:])
        else:
            case["steps"] = int(p)
    return case


def make_config(inputs: Path, data: Path, case: dict, steps: int) -> dict:
    from deeppot.config.input import normalize_input

    raw = (inputs / f"{case['name']}_se_e2_a.json").read_text().replace("DATA/", f"{data.resolve()}/")
    config = json.loads(raw)
    for part in ("descriptor", "fitting_net"):
        config["model"][part]["precision"] = case["precision"]
    training = config["training"]
    training.update(numb_steps=steps, save_freq=steps, enable_compile=case["compile"])
    if case["odd"]:
        config["model"]["descriptor"].update(neuron=[10, 20, 40], axis_neuron=8, sel=[37, 61])
        training["training_data"]["batch_size"] = 3
    if case["batch"]:
        training["training_data"]["batch_size"] = case["batch"]
    if case["frame"]:
        from memory_bench import replicated_system

        r = round((case["frame"] / 192) ** (1 / 3))
        system = replicated_system(r, Path(tempfile.mkdtemp(prefix="frame-")))
        training["training_data"]["systems"] = [str(system)]
        training.pop("validation_data", None)
        config["model"]["data_stat_nbatch"] = 1
    return normalize_input(config)


PEAK_TFLOPS = {"float64": 67.0, "float32": 495.0 / 3, "tf32": 495.0}


def step_gflop(config: dict, natoms: int, batch: int) -> float:
    """6 x the forward GEMM FLOPs of one step (see the module docstring), in GFLOP."""
    desc, fit = config["model"]["descriptor"], config["model"]["fitting_net"]
    widths = [1, *desc["neuron"]]
    embed = sum(2 * a * b for a, b in itertools.pairwise(widths))
    nnei, m1, m2 = sum(desc["sel"]), widths[-1], desc["axis_neuron"]
    fit_widths = [m1 * m2, *fit["neuron"], 1]
    fitting = sum(2 * a * b for a, b in itertools.pairwise(fit_widths))
    per_atom = nnei * embed + 2 * 4 * nnei * m1 + 2 * 4 * m1 * m2 + fitting
    return 6 * per_atom * natoms * batch / 1e9


def run_case(args: argparse.Namespace) -> dict:
    """Inside the child process: train one case and measure it."""
    import torch

    from deeppot.train.trainer import RunOptions, Trainer

    t_launch = float(os.environ[T_LAUNCH_ENV])
    set_embed_tile()
    case = parse_case(args.case)
    steps = case["steps"] or args.steps
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-{case['name']}-"))
    config = make_config(Path(args.inputs), Path(args.data), case, steps)
    options = RunOptions(workdir=workdir, device=torch.device("cuda"), cuda_graph=case["graph"], progress=False,
                         fused_kernels=case["fused"], tf32=case["tf32"])
    torch.cuda.init()  # the CUDA context apart from the trainer's set-up, for the start-up breakdown
    t_ready = time.time()
    trainer = Trainer(config, options)
    torch.cuda.synchronize()
    t_built = time.time()
    if args.profile:
        from deeppot.train.profile import profile_training

        print(profile_training(trainer, trace=workdir / "timeline.json", top=30), flush=True)
        return {"case": args.case, "profiled": True}
    starts, first_step_done, loop_wall = timed_run(trainer)
    ms = median_step_ms(starts, config["training"], steps)
    # where the start-up goes: interpreter, imports and the CUDA context; the trainer's set-up (data, statistics,
    # kernel choice, graph capture); the first step (first-use compiles, replays)
    startup = {"imports_and_cuda_init": round(t_ready - t_launch, 2), "trainer": round(t_built - t_ready, 2),
               "first_step": round(first_step_done - t_built, 2),
               "phases": {k: round(v, 2) for k, v in trainer.startup.phases.items()}}
    return {"case": args.case, "steps": steps, "cuda_graph": case["graph"], "fused_kernels": uses_kernels(trainer),
            "ms_per_step": round(ms, 4) if ms else None, **throughput(config, trainer, case, ms),
            "wall_ms_per_step": round(1e3 * loop_wall / steps, 4),
            "launch_to_first_step_s": round(first_step_done - t_launch, 2), "startup_s": startup,
            "peak_mem_MiB": round(torch.cuda.max_memory_allocated() / 2**20, 1),
            **accuracy(args, trainer, config["training"], workdir),
            "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}


def set_embed_tile() -> None:
    """DEEPPOT_BENCH_EMBED_TILE=BLOCK_J:num_warps sets the fused kernels' tile, for tuning runs."""
    if os.environ.get("DEEPPOT_BENCH_EMBED_TILE"):
        from deeppot.kernels import embedding

        block, warps = os.environ["DEEPPOT_BENCH_EMBED_TILE"].split(":")
        embedding.BLOCK_J, embedding.NUM_WARPS = int(block), int(warps)


def uses_kernels(trainer) -> bool:
    from deeppot.model import analytic

    return trainer.model.embed_fn is not analytic.embed_all


def timed_run(trainer) -> tuple[list, float, float]:
    """trainer.run() with a CUDA event at the start of every step: the events, the wall time at which the first
    step was done, the loop's wall seconds."""
    import torch

    starts: list = []
    first_step_done: list[float] = []
    real_step = trainer.step

    def timed_step(step: int):
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        starts.append(event)
        metrics = real_step(step)
        if step == trainer.start_step:
            torch.cuda.synchronize()
            first_step_done.append(time.time())
        return metrics

    trainer.step = timed_step
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    trainer.run()
    torch.cuda.synchronize()
    return starts, first_step_done[0], time.perf_counter() - t0


def median_step_ms(starts: list, training: dict, steps: int) -> float | None:
    """The median interval between step starts, display and checkpoint steps (and the warm-up) left out."""
    import numpy as np

    skip = {s for s in range(steps) if (s + 1) % training["disp_freq"] == 0 or s == 0
            or (s + 1) % training["save_freq"] == 0 or s + 2 == steps}  # a display delays the next step's start
    warm = min(50, steps // 10)
    gaps = [starts[i].elapsed_time(starts[i + 1]) for i in range(warm, steps - 1)
            if i not in skip and i + 1 not in skip]
    return float(np.median(gaps)) if gaps else None


def accuracy(args: argparse.Namespace, trainer, training: dict, workdir: Path) -> dict:
    """The last lcurve RMSEs and, with --test, the final model on every validation frame (as `dp test`)."""
    from deeppot.train.lcurve import read_lcurve

    last = {k: float(v[-1]) for k, v in read_lcurve(workdir / training["disp_file"]).items()}
    full_valid = None
    if args.test and training.get("validation_data"):
        from deeppot.data import find_systems
        from deeppot.evaluate import run_test

        report = run_test(trainer.model, find_systems(training["validation_data"]["systems"]), log=lambda *a: None)
        full_valid = {k: report.weighted[k] for k in ("rmse_e_per_atom", "rmse_f", "rmse_v_per_atom")
                      if k in report.weighted}
    return {"final": {k: last[k] for k in last if k.startswith(("rmse_e", "rmse_f", "rmse_v"))},
            "dp_test_validation": full_valid}


def throughput(config: dict, trainer, case: dict, ms: float | None) -> dict:
    """atoms/s and the model FLOP rate of a step of the (first) training system's batch."""
    system = trainer.train_data.systems[0]
    batch = trainer.train_data.batch_sizes[0]
    gflop = step_gflop(config, system.natoms, batch)
    if not ms:
        return {"step_gflop": round(gflop, 3)}
    tflops = gflop / ms  # GFLOP per ms = TFLOP/s
    arithmetic = "tf32" if case["tf32"] else case["precision"]
    return {"natoms": system.natoms, "batch": batch, "atoms_per_s": round(system.natoms * batch / ms * 1e3),
            "step_gflop": round(gflop, 3), "model_tflops": round(tflops, 3),
            "mfu": round(tflops / PEAK_TFLOPS[arithmetic], 5)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--inputs", default="../shared/bench/inputs")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--profile", action="store_true", help="print a profile of a few steps instead of timing")
    parser.add_argument("--test", action="store_true", help="also evaluate the final model on all validation frames")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # set in the child process
    args = parser.parse_args()
    if args.case:
        print("RESULT " + json.dumps(run_case(args)), flush=True)
        return
    for case in args.cases:
        t_launch = time.time()
        env = {**os.environ, T_LAUNCH_ENV: repr(t_launch)}
        cmd = [sys.executable, __file__, "--case", case, "--data", args.data, "--inputs", args.inputs,
               "--steps", str(args.steps)] + (["--profile"] if args.profile else []) + (["--test"] if args.test else [])
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if args.profile:
            print(proc.stdout + proc.stderr[-2000:], flush=True)
        wall = time.time() - t_launch
        result_lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        if proc.returncode != 0 or not result_lines:
            print(json.dumps({"case": case, "error": proc.stderr[-3000:]}), flush=True)
            continue
        result = json.loads(result_lines[-1][len("RESULT "):])
        result["wall_s"] = round(wall, 2)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
