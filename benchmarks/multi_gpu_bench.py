"""Data-parallel training throughput: frames/s on 1 and N GPUs, one JSON line per case.

Usage (from the repository root, on a machine with N GPUs):
    python benchmarks/multi_gpu_bench.py --gpus 1 2 --batch 1 4 --steps 300 water copper alloy
Accuracy at equal frames seen (each case trains N // (gpus × batch) steps, then validates):
    python benchmarks/multi_gpu_bench.py --gpus 1 2 --batch 1 --frames 40000 water
CPU smoke tests (gloo, 2 processes, a few steps; numbers mean nothing):
    python benchmarks/multi_gpu_bench.py --device cpu --gpus 1 2 --batch 1 --steps 4 water
    python benchmarks/multi_gpu_bench.py --device cpu --gpus 1 2 --batch 1 --frames 8 --valid-frames 2 water

Each (system, gpus, per-GPU batch) case runs in fresh processes: plain `python` for 1 GPU (the one-process path,
no torch.distributed), `torchrun --standalone --nproc_per_node N` otherwise. A case trains <inputs>/<NAME>_se_e2_a.json
("DATA/" paths point at --data) without validation, with training.batch_size set to the per-GPU batch and display
and checkpoint only at the first and last steps. Timing: rank 0's wall clock over the steps after the first
`--warmup` (CUDA synchronised at both ends; the ranks move in lockstep through the gradient all-reduce).
frames_per_s = gpus × batch × timed steps / seconds (every rank trains on its own batch of frames).
peak_mem_MiB: the largest torch.cuda.max_memory_allocated over the ranks (null on the CPU).

--frames N (the "validation RMSE within 10% of the one-GPU run at equal frames seen" check): every case trains
steps = N // (gpus × batch), with the input's learning rate as given (its exp schedule spans those steps;
learning_rate.scale_by_worker as in the input, else its default), its training.seed (1 where it has none) and its
validation_data kept (so the lcurve validates at the first and last steps, both outside the timed window; warmup
defaults to max(1, steps // 5) so that the first display is not timed). After training, rank 0 tests the final
model on the validation systems as `dp test` does (every frame, or --valid-frames K per system), outside the
timed window, and adds frames_seen (gpus × batch × steps), steps and valid_rmse_e_per_atom / valid_rmse_f /
valid_rmse_v_per_atom (those the data has). The case is then named NAME:bsB:framesN.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def make_config(args: argparse.Namespace) -> dict:
    from deeppot.config.input import normalize_input

    raw = Path(args.inputs, f"{args.name}_se_e2_a.json").read_text().replace("DATA/", f"{Path(args.data).resolve()}/")
    config = json.loads(raw)
    if args.precision:
        for part in ("descriptor", "fitting_net"):
            config["model"][part]["precision"] = args.precision
    training = config["training"]
    if args.frames is None:
        training.pop("validation_data", None)  # throughput of the step alone
    else:
        training.setdefault("seed", 1)  # the accuracy comparison must be reproducible
    training["training_data"]["batch_size"] = args.batch
    training.update(numb_steps=args.steps, disp_freq=args.steps, save_freq=args.steps)
    training.pop("numb_epoch", None)
    return normalize_input(config)


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _peak_mem_mib(info, device) -> float | None:
    """The largest peak allocation over the ranks (MiB), None on the CPU."""
    import torch
    import torch.distributed as dist

    if device.type != "cuda":
        return None
    peak = torch.tensor(float(torch.cuda.max_memory_allocated(device)), device=device)
    if info.enabled:
        dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    return round(peak.item() / 2**20, 1)


def case_name(name: str, batch: int, frames: int | None) -> str:
    return f"{name}:bs{batch}" + (f":frames{frames}" if frames is not None else "")


def case_steps(args: argparse.Namespace, gpus: int, batch: int) -> tuple[int, int]:
    """(steps, warmup) of a case: --steps, or N // (gpus × batch) for --frames N."""
    if args.frames is None:
        return args.steps, args.warmup
    steps = args.frames // (gpus * batch)
    # the first display step validates: keep it out of the timed window unless --warmup says otherwise
    return steps, max(1, steps // 5) if args.warmup is None else args.warmup


def validate(trainer, config: dict, valid_frames: int) -> dict:
    """The final model on the validation systems, as `dp test` (numb_test valid_frames per system, 0 = all)."""
    from deeppot.data import find_systems
    from deeppot.evaluate import run_test

    systems = find_systems(config["training"]["validation_data"]["systems"])
    report = run_test(trainer.model, systems, numb_test=valid_frames, log=lambda *a: None)
    return {f"valid_{k}": report.weighted[k] for k in ("rmse_e_per_atom", "rmse_f", "rmse_v_per_atom")
            if k in report.weighted}


def result_row(args: argparse.Namespace, trainer, info, device, seconds: float, peak: float | None) -> dict:
    timed = args.steps - args.warmup
    frames = info.world_size * args.batch
    row = {"case": case_name(args.name, args.batch, args.frames), "gpus": info.world_size,
           "batch_per_gpu": args.batch, "frames_per_s": round(frames * timed / seconds, 2),
           "ms_per_step": round(1e3 * seconds / timed, 3), "peak_mem_MiB": peak,
           "steps_timed": timed, "device": str(device), "cuda_graph": trainer.graphed is not None}
    if args.frames is not None:
        row.update(frames_seen=frames * args.steps, steps=args.steps)
    return row


def run_worker(args: argparse.Namespace) -> None:
    """Inside each rank: train the case; rank 0 prints 'RESULT {json}'."""
    from deeppot.train import distributed
    from deeppot.train.trainer import RunOptions, Trainer, pick_device

    logging.basicConfig(level=logging.WARNING)
    if args.hang_dump:  # a diagnosis: every thread's Python stack on stderr, then exit, if the case runs too long
        faulthandler.dump_traceback_later(args.hang_dump, exit=True)
    info, rank_device = distributed.from_env(args.device)
    device = rank_device or pick_device(args.device)
    options = RunOptions(workdir=Path(tempfile.mkdtemp(prefix=f"mgpu-{args.name}-")), device=device, progress=False,
                         cuda_graph=False if args.eager else None, dist=info)
    trainer = None
    try:
        config = make_config(args)
        trainer = Trainer(config, options)
        times: dict[str, float] = {}
        real_step = trainer.step

        def timed_step(step: int):
            if step == args.warmup:
                _sync(device)
                times["start"] = time.perf_counter()
            metrics = real_step(step)
            if step == args.steps - 1:
                _sync(device)
                times["end"] = time.perf_counter()
            return metrics

        trainer.step = timed_step
        trainer.run()
        peak = _peak_mem_mib(info, device)
        if info.is_main:
            result = result_row(args, trainer, info, device, times["end"] - times["start"], peak)
            if args.frames is not None:  # after the timed window; the other ranks wait at the barrier
                result.update(validate(trainer, config, args.valid_frames))
            print("RESULT " + json.dumps(result), flush=True)
        distributed.barrier(info)  # as the CLI: no rank destroys the group while another still uses it
    finally:
        if trainer is not None:
            trainer.release_graphs()  # as the CLI: captured NCCL all-reduces would hang destroy_process_group
        distributed.shutdown(info)


def launch(args: argparse.Namespace, name: str, gpus: int, batch: int) -> dict:
    steps, warmup = case_steps(args, gpus, batch)
    if not 0 <= warmup < steps:
        return {"case": case_name(name, batch, args.frames), "gpus": gpus,
                "error": f"{steps} steps with {warmup} warmup: no timed step (raise --frames or lower --warmup)"}
    worker = [__file__, "--worker", "--name", name, "--batch", str(batch), "--steps", str(steps),
              "--warmup", str(warmup), "--data", args.data, "--inputs", args.inputs]
    worker += ["--frames", str(args.frames), "--valid-frames", str(args.valid_frames)] if args.frames else []
    worker += ["--device", args.device] if args.device else []
    worker += ["--precision", args.precision] if args.precision else []
    worker += ["--eager"] if args.eager else []
    worker += ["--hang-dump", str(args.hang_dump)] if args.hang_dump else []
    if gpus == 1:  # the one-process path: no torchrun, no process group
        cmd = [sys.executable, *worker]
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(gpus), *worker]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    found = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not found:
        output = proc.stdout + proc.stderr
        return {"case": case_name(name, batch, args.frames), "gpus": gpus, "error": output[-12000:]}
    return json.loads(found[-1][len("RESULT "):])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", default=["water", "copper", "alloy"])
    parser.add_argument("--gpus", type=int, nargs="+", default=[1, 2], help="process counts to compare")
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 4], help="per-GPU batch sizes")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=None, help="untimed first steps (default: steps // 5)")
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--inputs", default=str(ROOT.parent / "shared" / "bench" / "inputs"))
    parser.add_argument("--precision", default=None, help="override the inputs' precision (float32, float64)")
    parser.add_argument("--device", default=None, help="cpu for a gloo smoke test (default: cuda when available)")
    parser.add_argument("--eager", action="store_true", help="no CUDA graphs")
    parser.add_argument("--frames", type=int, default=None,
                        help="accuracy mode: total frames seen over all ranks (replaces --steps), then validate")
    parser.add_argument("--valid-frames", type=int, default=0,
                        help="with --frames: validation frames tested per system (default 0 = all)")
    parser.add_argument("--hang-dump", type=float, default=None, metavar="S",
                        help="diagnosis: a rank still running after S seconds prints its threads' stacks and exits")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.frames is None:
        args.warmup = args.steps // 5 if args.warmup is None else args.warmup
        if not 0 <= args.warmup < args.steps:
            parser.error("--warmup must be in [0, steps)")
    elif args.frames <= 0 or args.valid_frames < 0:
        parser.error("--frames must be positive and --valid-frames non-negative")
    if args.worker:
        args.batch = args.batch[0]
        run_worker(args)
        return
    for name in args.names:
        for batch in args.batch:
            for gpus in args.gpus:
                print(json.dumps(launch(args, name, gpus, batch)), flush=True)


if __name__ == "__main__":
    main()
