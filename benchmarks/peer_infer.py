"""The DeePMD-kit peer of infer_bench.py: deepmd.infer.DeepPot.eval (energy, forces, virial) on the same .dp models.

Run by `infer_bench.py --peer WHEEL_DIR` with DeePMD-kit 3.2.0 on PYTHONPATH; by hand:
    python benchmarks/peer_infer.py --data .peer/data --sizes 192 1536 --models water:float64=/tmp/water_float64.dp
Each model is converted to TorchScript (.pth) with the function behind `dp convert-backend model.dp model.pth`,
then timed as ../shared/bench/peer/deepmd_eval.py does (NumPy in and out, warm-up calls first). Prints the JSON
lines of infer_bench.py with "tool": "deepmd-kit", "mode": "eval". Once a size runs out of memory, the larger sizes
of that model are not tried (its neighbour search allocates natoms x nall; see ../shared/bench/README.md).
"""

from __future__ import annotations

import argparse
import gc
import math
import time
from pathlib import Path

from infer_bench import (
    OOM,
    device_info,
    emit,
    finish_row,
    is_oom,
    peak_mib,
    reset_peak,
    supercells,
    sync_fn,
    time_calls,
)


def convert(dp_path: str) -> str:
    """model.dp -> model.pth next to it, as `dp convert-backend model.dp model.pth`."""
    from deepmd.entrypoints.convert_backend import convert_backend

    pth = str(Path(dp_path).with_suffix(".pth"))
    convert_backend(INPUT=dp_path, OUTPUT=pth)
    return pth


def measure(torch, dp, cell, args) -> dict:
    natoms, _, coord, box, atype = cell
    c, b = coord.reshape(1, -1), box.reshape(1, 9)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    reset_peak(torch, dev)
    stats, (e, _, _) = time_calls(lambda: dp.eval(c, b, atype), sync_fn(torch, dev), args.repeat_seconds,
                                  args.case_seconds, args.min_calls, warmup=3)
    return finish_row({"e_per_atom": float(e.ravel()[0]) / natoms, "peak_mem_MiB": peak_mib(torch, dev)}, stats,
                      natoms)


def run_model(torch, args, key: str, dp_path: str, t_end: float) -> None:
    import deepmd
    from deepmd.infer import DeepPot

    system, precision = key.split(":")
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    info = {**device_info(torch, dev), "deepmd_version": deepmd.__version__, "backend": "pt"}
    dp = DeepPot(convert(dp_path))
    failed = None
    for cell in supercells(Path(args.data), system, args.sizes):
        natoms, reps = cell[0], cell[1]
        row = {"case": f"{system}:{precision}:{natoms}", "tool": "deepmd-kit", "mode": "eval", "system": system,
               "precision": precision, "natoms": natoms, "replicas": reps, "weights": "random", **info}
        if failed or time.perf_counter() > t_end:
            row["error"] = f"not run: {failed}" if failed else "skipped: time budget (--deadline) spent"
            emit(row, None)
            continue
        try:
            row.update(measure(torch, dp, cell, args))
        except Exception as exc:  # DeePMD-kit raises its own OutOfMemoryError at batch size 1
            oom = is_oom(torch, exc) or type(exc).__name__ == "OutOfMemoryError"
            row["error"] = OOM if oom else f"{type(exc).__name__}: {str(exc)[:500]}"
            failed = f"{OOM} at {natoms} atoms" if oom else None
        emit(row, None)
        gc.collect()
        if dev.type == "cuda":
            torch.cuda.empty_cache()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--models", nargs="+", required=True, help="SYSTEM:PRECISION=MODEL.dp ...")
    p.add_argument("--sizes", nargs="+", type=int, required=True)
    p.add_argument("--repeat-seconds", type=float, default=1.0)
    p.add_argument("--case-seconds", type=float, default=20.0)
    p.add_argument("--min-calls", type=int, default=5)
    p.add_argument("--deadline", type=float, default=0.0, help="seconds; later cases are skipped")
    args = p.parse_args()
    import torch

    t_end = time.perf_counter() + (args.deadline or math.inf)
    for item in args.models:
        key, dp_path = item.split("=", 1)
        try:
            run_model(torch, args, key, dp_path, t_end)
        except Exception as exc:  # a model that fails to convert or load: say so, go on
            emit({"case": key, "tool": "deepmd-kit", "error": f"{type(exc).__name__}: {str(exc)[:500]}"}, None)


if __name__ == "__main__":
    main()
