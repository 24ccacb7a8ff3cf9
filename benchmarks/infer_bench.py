"""Inference benchmark: energy + forces + virial of replicated water and copper cells, one JSON line per measurement.

Usage (repository root; on the GPU machine see benchmarks/infer_bench.sh, which also runs DeePMD-kit):
    PYTHONPATH=$PWD python benchmarks/infer_bench.py --sizes 192 1536 12288 98304 1000000 \
        --precisions float32 float64 --systems water copper --out infer.jsonl [--peer .peer/whl]

Systems: the first frame of water/data_0 (192 atoms) and of copper/C11_C12_I_strain_0.000 (108 atoms, one type,
sel 96), replicated r x r x r times, r the smallest with at least SIZE atoms (water 1,000,000 -> 18^3 cells =
1,119,744 atoms; copper 1,000,000 -> 21^3 = 1,000,188); a case is named SYSTEM:PRECISION:NATOMS by its real count.
Models: fresh weights ("weights": "random") from the model section of <inputs>/<system>_se_e2_a.json at the case's
precision, saved as .dp for the peer; or, with --models water:float32=PATH ..., those files ("weights": "file"): a
trained model's data statistics set the range its float32 products are checked against, so time trained models too.
Modes, per size:
  eval            deeppot.infer.DeepPot.eval: NumPy in and out, neighbour list built in every call;
  prebuilt_nlist  Evaluator.evaluate_neighbors on device tensors with the neighbour list built once (what MD uses);
                  nlist_ms is the time of one neighbour-list build; the peak counts the built list, not its build;
  graphed         the same replayed from a CUDA graph (GPU only; GraphedEvaluation, what MD on small systems uses).
Pair stages (--paths): auto = the fused Triton kernels where they run ("path": "fused-f16x3" or "fused-tf32x3", the
scheme of their float32 products, `deeppot.kernels.precision`), else PyTorch; pytorch = fused=False ("path":
"pytorch"); tf32 = the mixed-precision opt-in, float32: TF32 GEMMs in the fused embedding kernels and the fitting nets
("path": "fused-tf32"); tf32x3 = float32's products as three TF32 products where auto picks f16x3.
ms_per_call is the mean over calls after warm-up (each call synchronised), atom_steps_per_s = natoms / that;
peak_mem_MiB is torch.cuda.max_memory_allocated over the case (reset before its warm-up). A case that runs out of
GPU memory gives a line with "error": "out of memory". With --peer WHEEL_DIR, DeePMD-kit 3.2.0 is installed from the
wheels and times deepmd.infer.DeepPot.eval on the same .dp models (converted to .pth) in a subprocess
(benchmarks/peer_infer.py), before deeppot touches the GPU; its lines have "tool": "deepmd-kit".
Energies per atom (e_per_atom) of the two tools should agree: same weights.
With --compress, compressed copies of the models (`deeppot compress` defaults: step 0.01, extrapolate 5,
min_nbor_dist from the benchmark frame) are timed too, in cases named SYSTEM:PRECISION:NATOMS:compressed ("path":
"fused" = the table kernels of deeppot/kernels/compressed.py). The peer gets the uncompressed models only.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

SYSTEMS = {
    "water": ("water/data_0", "water_se_e2_a.json"),
    "copper": ("copper/C11_C12_I_strain_0.000", "copper_se_e2_a.json"),
    "alloy": ("alloy/train/sys.000", "alloy_se_e2_a.json"),  # 108 atoms: 51 Al, 41 Cu, 16 Ni
}
DEFAULT_SIZES = [192, 1536, 12288, 98304, 1_000_000]
OOM = "out of memory"


# ---- systems, shared with peer_infer.py -------------------------------------------------------------------------

def load_frame(data: Path, system: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """First frame of SYSTEMS[system]: coord (n, 3), box (3, 3), atype (n,)."""
    folder = Path(data) / SYSTEMS[system][0]
    coord = np.load(folder / "set.000/coord.npy")[0].reshape(-1, 3)
    box = np.load(folder / "set.000/box.npy")[0].reshape(3, 3)
    atype = np.loadtxt(folder / "type.raw", dtype=np.int64, ndmin=1)
    return coord, box, atype


def replicas_for(size: int, ncell: int) -> int:
    """The smallest r with ncell * r^3 >= size."""
    r = max(1, round((size / ncell) ** (1 / 3)))
    while ncell * r**3 < size:
        r += 1
    while r > 1 and ncell * (r - 1) ** 3 >= size:
        r -= 1
    return r


def replicate(coord: np.ndarray, box: np.ndarray, atype: np.ndarray, r: int):
    """The cell repeated r x r x r times: coord (r^3 n, 3), box (3, 3), atype (r^3 n,)."""
    shifts = np.array([[i, j, k] for i in range(r) for j in range(r) for k in range(r)], dtype=np.float64) @ box
    return (coord[None] + shifts[:, None]).reshape(-1, 3), box * r, np.tile(atype, r**3)


def supercells(data: Path, system: str, sizes: list[int]):
    """(natoms, replicas, coord, box, atype) per distinct size, smallest first."""
    coord, box, atype = load_frame(data, system)
    reps = sorted({replicas_for(s, len(atype)) for s in sizes})
    for r in reps:
        yield (len(atype) * r**3, r, *replicate(coord, box, atype, r))


# ---- timing, shared with peer_infer.py --------------------------------------------------------------------------

def time_calls(fn, sync, repeat_s: float, case_s: float, min_calls: int = 5, warmup: int = 2) -> tuple[dict, object]:
    """Warm-up calls, then calls until repeat_s seconds and min_calls calls have passed (or case_s seconds)."""
    for i in range(warmup):  # the first call may compile kernels; a later slow call ends the warm-up
        t = time.perf_counter()
        fn()
        sync()
        if i > 0 and time.perf_counter() - t > case_s / 4:
            break
    times, out = [], None
    t0 = time.perf_counter()
    while True:
        t = time.perf_counter()
        out = fn()
        sync()
        times.append(time.perf_counter() - t)
        elapsed = time.perf_counter() - t0
        if (elapsed >= repeat_s and len(times) >= min_calls) or elapsed >= case_s:
            break
    ms = np.array(times) * 1e3
    return {"ms_per_call": round(float(ms.mean()), 4), "ms_median": round(float(np.median(ms)), 4),
            "ms_min": round(float(ms.min()), 4), "calls": len(times)}, out


def device_info(torch, device) -> dict:
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else None
    return {"gpu": gpu, "device": str(device), "torch": torch.__version__}


def sync_fn(torch, device):
    return (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)


def reset_peak(torch, device) -> None:
    if device.type == "cuda":
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def peak_mib(torch, device) -> float | None:
    return round(torch.cuda.max_memory_allocated(device) / 2**20, 1) if device.type == "cuda" else None


def is_oom(torch, exc: BaseException) -> bool:
    return isinstance(exc, torch.cuda.OutOfMemoryError) or "out of memory" in str(exc).lower()


def finish_row(row: dict, stats: dict, natoms: int) -> dict:
    row.update(stats)
    row["atom_steps_per_s"] = round(natoms / (stats["ms_per_call"] * 1e-3), 1)
    return row


def emit(row: dict, out: str | None) -> None:
    line = json.dumps(row)
    print(line, flush=True)
    if out:
        with open(out, "a") as fh:
            fh.write(line + "\n")


# ---- deeppot --------------------------------------------------------------------------------------------------

def make_model(inputs: Path, system: str, precision: str):
    from deeppot.model import EnergyModel

    cfg = json.loads((Path(inputs) / SYSTEMS[system][1]).read_text())["model"]
    for part in ("descriptor", "fitting_net"):
        cfg[part]["precision"] = precision
    return EnergyModel.from_config(cfg)


def frame_min_dist(data: Path, system: str) -> float:
    """The smallest interatomic distance of the benchmark frame (minimum image; the cells are > 2 * that)."""
    coord, box, _ = load_frame(data, system)
    frac = (coord[:, None] - coord[None]) @ np.linalg.inv(box)
    d = np.linalg.norm((frac - np.round(frac)) @ box, axis=-1)
    return float(d[~np.eye(len(coord), dtype=bool)].min())


def save_models(args, model_dir: Path) -> dict[str, str]:
    """Fresh models of every system and precision, saved as model_dir/SYSTEM_PRECISION.dp, or the files of
    --models: {"sys:prec": path}; with --compress also SYSTEM_PRECISION_compressed.dp: {"sys:prec:compressed": path}."""
    from deeppot.io import load_model, save_model
    from deeppot.io.compress import compress_model

    paths = {}
    for system in args.systems:
        for precision in args.precisions:
            key = f"{system}:{precision}"
            if key in args.models:  # the user's model, e.g. a trained one: its statistics set its float16 range
                path = args.models[key]
                model = load_model(path)
            else:
                path = model_dir / f"{system}_{precision}.dp"
                model = make_model(args.inputs, system, precision)
                save_model(model, path)
            paths[key] = str(path)
            if args.compress:
                model.min_nbor_dist.fill_(frame_min_dist(args.data, system))
                path = model_dir / f"{system}_{precision}_compressed.dp"
                save_model(compress_model(model), path)
                paths[f"{system}:{precision}:compressed"] = str(path)
    return paths


def measure_eval(torch, dp, cell, args) -> dict:
    """DeepPot.eval with NumPy in and out (neighbour list in every call)."""
    natoms, _, coord, box, atype = cell
    c, b = coord[None], box.reshape(1, 9)
    dev = dp.evaluator.device
    reset_peak(torch, dev)
    stats, (e, _, _) = time_calls(lambda: dp.eval(c, b, atype), sync_fn(torch, dev), args.repeat_seconds,
                                  args.case_seconds, args.min_calls)
    return finish_row({"e_per_atom": float(e[0, 0]) / natoms, "peak_mem_MiB": peak_mib(torch, dev)}, stats, natoms)


def measure_prebuilt(torch, dp, cell, args, evaluate=None) -> dict:
    """Evaluator.evaluate_neighbors (or `evaluate`) on a neighbour list built once, outside the timing."""
    natoms, _, coord, box, atype = cell
    ev, dev = dp.evaluator, dp.evaluator.device
    coord_t = torch.as_tensor(coord, dtype=torch.float64, device=dev).reshape(1, natoms, 3)
    atype_t = torch.as_tensor(atype, dtype=torch.int64, device=dev).reshape(1, natoms)
    box_t = torch.as_tensor(box, dtype=torch.float64, device=dev).reshape(1, 3, 3)
    sync = sync_fn(torch, dev)
    ev.neighbors(coord_t, atype_t, box_t)  # warm-up of the builder
    sync()
    t0 = time.perf_counter()
    flat = ev.neighbors(coord_t, atype_t, box_t)
    sync()
    nlist_ms = round((time.perf_counter() - t0) * 1e3, 3)
    reset_peak(torch, dev)  # the peak: the built list (resident) + the evaluation
    evaluate = evaluate or ev.evaluate_neighbors
    stats, out = time_calls(lambda: evaluate(flat), sync, args.repeat_seconds, args.case_seconds, args.min_calls)
    row = {"e_per_atom": float(out["energy"][0]) / natoms, "peak_mem_MiB": peak_mib(torch, dev), "nlist_ms": nlist_ms}
    return finish_row(row, stats, natoms)


def measure_graphed(torch, dp, cell, args) -> dict:
    """As prebuilt_nlist, the evaluation replayed from a CUDA graph (deeppot.infer.graph.GraphedEvaluation)."""
    from deeppot.infer.graph import GraphedEvaluation

    graphed = GraphedEvaluation(dp.evaluator)
    return measure_prebuilt(torch, dp, cell, args, lambda flat: graphed(flat))


MEASURE = {"eval": measure_eval, "prebuilt_nlist": measure_prebuilt, "graphed": measure_graphed}
PATH_OPTIONS = {"auto": {}, "pytorch": {"fused": False}, "tf32": {"tf32": True}, "tf32x3": {"products": "tf32x3"}}


def run_mode(torch, dp, cell, mode: str, base: dict, args) -> dict:
    """One measurement; out of memory and other failures become an "error" field."""
    row = dict(base, mode=mode)
    try:
        row.update(MEASURE[mode](torch, dp, cell, args))
    except Exception as exc:  # one failing case must not end the run
        row["error"] = OOM if is_oom(torch, exc) else f"{type(exc).__name__}: {str(exc)[:500]}"
    gc.collect()
    if dp.evaluator.device.type == "cuda":
        torch.cuda.empty_cache()
    return row


def run_model(torch, args, system: str, precision: str, model_path: str, path_opt: str, t_end: float,
              variant: str = "") -> bool:
    """Every size and mode of one system, precision and pair-stage choice; True when the fused kernels ran."""
    from deeppot.infer import DeepPot

    dp = DeepPot(model_path, device=args.device, **PATH_OPTIONS[path_opt])
    info = device_info(torch, dp.evaluator.device)
    path = f"fused-{dp.evaluator.products}" if dp.evaluator.fused else "pytorch"
    for cell in supercells(args.data, system, args.sizes):
        natoms, reps = cell[0], cell[1]
        base = {"case": f"{system}:{precision}:{natoms}{variant}", "tool": "deeppot", "path": path, "system": system,
                "precision": precision, "natoms": natoms, "replicas": reps,
                "weights": "file" if f"{system}:{precision}" in args.models else "random",
                "compressed": bool(variant), **info}
        for mode in args.modes:
            if time.perf_counter() > t_end:
                emit(dict(base, mode=mode, error="skipped: time budget (--deadline) spent"), args.out)
                continue
            emit(run_mode(torch, dp, cell, mode, base, args), args.out)
    return dp.evaluator.fused


def run_deeppot(args, models: dict[str, str]) -> None:
    import torch

    t_end = time.perf_counter() + (args.deadline or math.inf)
    fused = {}  # "system:precision" -> whether "auto" ran the fused kernels
    for path_opt in args.paths:
        for system in args.systems:
            for precision in args.precisions:
                key = f"{system}:{precision}"
                if path_opt != "auto" and (fused.get(key) is False or (path_opt.startswith("tf32")
                                                                       and precision != "float32")):
                    continue  # "auto" already ran the PyTorch pair stage; tf32 changes float32 GEMMs only
                ran_fused = run_model(torch, args, system, precision, models[key], path_opt, t_end)
                if path_opt == "auto":
                    fused[key] = ran_fused
                if args.compress:  # tf32: the tables have no GEMMs, the fitting nets take TF32
                    run_model(torch, args, system, precision, models[f"{key}:compressed"], path_opt, t_end,
                              ":compressed")


# ---- the DeePMD-kit peer ----------------------------------------------------------------------------------------

def install_peer(wheels: Path, site: Path) -> dict:
    """pip install the wheels into `site` as .peer/peer/deepmd_infer.sh does; returns the peer's environment."""
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                    "--no-cache-dir", "--upgrade", "--target", str(site), *map(str, sorted(wheels.glob("*.whl")))],
                   check=True)
    ini = site / "deepmd/lib/run_config.ini"  # the PyPI wheel asks for MPI, which single-GPU inference does not need
    ini.write_text(re.sub(r"(?im)^CIBUILDWHEEL *= *1", "CIBUILDWHEEL = 0", ini.read_text()))
    stubs = next((p for p in (wheels.parent / "peer/stubs", Path(__file__).parents[2] / "shared/bench/peer/stubs")
                  if p.is_dir()), None)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (site, stubs) if p)}
    probe = subprocess.run([sys.executable, "-c", "import deepmd.pt.cxx_op"], env=env, capture_output=True)
    if probe.returncode != 0:  # its compiled ops want CUDA 12 + MPI; se_e2_a does not use them
        (site / "deepmd/lib/libdeepmd_op_pt.so").unlink(missing_ok=True)
    return env


def peer_command(args, models: dict[str, str]) -> list[str]:
    script = Path(__file__).with_name("peer_infer.py")
    cmd = [sys.executable, str(script), "--data", str(args.data), "--sizes", *map(str, args.sizes),
           "--repeat-seconds", str(args.repeat_seconds), "--case-seconds", str(args.case_seconds),
           "--min-calls", str(args.min_calls), "--deadline", str(args.peer_seconds), "--models"]
    return cmd + [f"{key}={path}" for key, path in models.items()]


def run_peer(args, models: dict[str, str]) -> None:
    """DeePMD-kit's DeepPot.eval on the same models, in a subprocess killed after --peer-seconds + 30 s."""
    t0 = time.perf_counter()
    try:
        env = install_peer(Path(args.peer).resolve(), Path(tempfile.gettempdir()) / "peer-site")
    except (subprocess.CalledProcessError, OSError) as exc:
        emit({"tool": "deepmd-kit", "error": f"peer install failed: {exc}"}, args.out)
        return
    log = open(Path(args.out).with_suffix(".peer.log"), "w") if args.out else None  # noqa: SIM115
    proc = subprocess.Popen(peer_command(args, models), env=env, stdout=subprocess.PIPE, stderr=log, text=True)
    timer = threading.Timer(args.peer_seconds + 30, proc.kill)
    timer.start()
    for line in proc.stdout:
        if line.startswith("{"):
            emit(json.loads(line), args.out)
    proc.wait()
    timer.cancel()
    if log:
        log.close()
    if proc.returncode:
        emit({"tool": "deepmd-kit", "error": f"peer exited with {proc.returncode} (killed after --peer-seconds + 30 "
              "s if negative); see the .peer.log"}, args.out)
    print(f"# peer: rc={proc.returncode}, {time.perf_counter() - t0:.1f} s with install", file=sys.stderr)


# ---- summary --------------------------------------------------------------------------------------------------

def summarize(path: str) -> None:
    """A table of a JSON-lines file; "x peer" = DeePMD-kit's ms/call over deeppot's, same case and mode."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.startswith("{")]
    peer = {(r["case"], r["mode"]): r["ms_per_call"] for r in rows
            if r.get("tool") == "deepmd-kit" and "ms_per_call" in r}
    print(f"{'case':24} {'tool':10} {'mode':14} {'path':7} {'ms/call':>10} {'atom-steps/s':>12} {'MiB':>8} "
          f"{'x peer':>7}  error")
    for r in sorted(rows, key=lambda r: (r.get("system", ""), r.get("precision", ""), r.get("natoms", 0),
                                         r.get("tool", ""), r.get("mode", ""), r.get("path", ""))):
        ms = r.get("ms_per_call")
        key = (r.get("case"), r.get("mode"))
        ratio = peer[key] / ms if ms and r.get("tool") == "deeppot" and key in peer else None
        print(f"{r.get('case', '-'):24} {r.get('tool', '-'):10} {r.get('mode', '-'):14} {r.get('path') or '-':7} "
              f"{_fmt(ms, '.3f'):>10} {_fmt(r.get('atom_steps_per_s'), '.3g'):>12} "
              f"{_fmt(r.get('peak_mem_MiB'), '.0f'):>8} {_fmt(ratio, '.1f'):>7}  {r.get('error', '')[:60]}")


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


# ---- command line ---------------------------------------------------------------------------------------------

def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", nargs="+", type=float, default=DEFAULT_SIZES, help="atoms (at least) per case")
    p.add_argument("--precisions", nargs="+", default=["float32", "float64"])
    p.add_argument("--systems", nargs="+", default=["water", "copper"],
                   help="water, copper, alloy (space or comma list)")
    p.add_argument("--modes", nargs="+", default=list(MEASURE), choices=list(MEASURE))
    p.add_argument("--paths", nargs="+", default=["auto"], choices=list(PATH_OPTIONS),
                   help="auto: fused kernels where they run; pytorch: the PyTorch pair stage (fused=False); "
                        "tf32: the mixed-precision opt-in, TF32 GEMMs (float32 only); tf32x3: float32 products "
                        "as three TF32 products")
    p.add_argument("--data", type=Path, default=Path("../shared/data"))
    p.add_argument("--inputs", type=Path, default=Path("../shared/bench/inputs"))
    p.add_argument("--out", help="append the JSON lines to this file")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:N (default: a GPU when there is one)")
    p.add_argument("--repeat-seconds", type=float, default=1.0, help="time each case at least this long")
    p.add_argument("--min-calls", type=int, default=5)
    p.add_argument("--case-seconds", type=float, default=20.0, help="stop a case's timing loop after this long")
    p.add_argument("--deadline", type=float, default=0.0, help="seconds for deeppot's cases; later ones are skipped")
    p.add_argument("--peer", help="folder of DeePMD-kit 3.2.0 wheels: also time DeePMD-kit on the same models")
    p.add_argument("--peer-seconds", type=float, default=150.0, help="time budget of the peer's cases")
    p.add_argument("--compress", action="store_true", help="also time compressed copies of the models "
                   "(cases SYSTEM:PRECISION:NATOMS:compressed)")
    p.add_argument("--model-dir", help="where the .dp models go (default: a temporary folder)")
    p.add_argument("--models", nargs="+", default=[], metavar="SYSTEM:PRECISION=PATH",
                   help="time these model files (e.g. trained ones, \"weights\": \"file\") instead of fresh models")
    p.add_argument("--skip-deeppot", action="store_true", help="run only the peer")
    p.add_argument("--summary", metavar="JSONL", help="print a table of a results file and exit")
    args = p.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes]
    pairs = [m.partition("=") for m in args.models]
    if any(not sep or key.count(":") != 1 for key, sep, _ in pairs):
        p.error("--models takes SYSTEM:PRECISION=PATH, e.g. water:float32=model.dp")
    args.models = {key: path for key, _, path in pairs}
    args.systems = [s for text in args.systems for s in text.split(",") if s]
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown:
        p.error(f"unknown systems {sorted(unknown)}; known: {sorted(SYSTEMS)}")
    unused = set(args.models) - {f"{s}:{q}" for s in args.systems for q in args.precisions}
    if unused:  # a misspelt key would otherwise time a fresh model under the file's name
        p.error(f"--models {sorted(unused)} match no --systems x --precisions case")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.summary:
        summarize(args.summary)
        return
    model_dir = Path(args.model_dir or tempfile.mkdtemp(prefix="infer-bench-"))
    model_dir.mkdir(parents=True, exist_ok=True)
    models = save_models(args, model_dir)
    if args.peer:  # first, while this process holds no GPU memory; a crash of either side spares the other
        # DeePMD-kit's PyTorch backend drops the tables of a .dp file (it keeps them in its state dict only), so the
        # peer would time an uncompressed model under a compressed name: it gets the uncompressed models only
        run_peer(args, {k: v for k, v in models.items() if not k.endswith(":compressed")})
    if not args.skip_deeppot:
        run_deeppot(args, models)


if __name__ == "__main__":
    main()
