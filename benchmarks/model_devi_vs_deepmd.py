"""`deeppot model-devi` against DeePMD-kit's `dp --pt model-devi` on the same models and frames: one JSON line.

Usage (from the repository root, on a machine where DeePMD-kit's PyTorch backend imports, e.g. a GPU machine):
    python benchmarks/model_devi_vs_deepmd.py m0.dp m1.dp m2.dp m3.dp --system DATA_DIR [--atomic] [--relative L]
        [--relative-v L] [--real-error] [-f N] [--dp "python3 -m deepmd"] [--workdir DIR]

The .dp models are converted with `dp convert-backend m.dp WORKDIR/m.pth` (kept and reused by later runs with
the same --workdir); both programs write their model_devi.out for every system under DATA_DIR; the files are cut
into per-system blocks (DeePMD-kit orders systems as the file system lists them, deeppot sorts them) and compared
value by value. The JSON line gives, per column, the largest absolute and relative difference (relative to
DeePMD-kit's value; 0 where both are 0) and the largest DeePMD-kit value (max_ref: the scale for max_abs where
values near 0 make max_rel meaningless), whether every block's text is identical, and each program's wall time.
The files hold 7 significant digits, so a relative difference up to ~5e-7 is one rounding step of the last digit.
DeePMD-kit 3.2's --relative_v only works on sets of one frame (it divides (nf, 9) by (nf,)); deeppot's does not
depend on the set size.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

NAMES = ("max_devi_v", "min_devi_v", "avg_devi_v", "max_devi_f", "min_devi_f", "avg_devi_f", "devi_e")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="+", help="two or more DeePMD-kit .dp models of one type map")
    p.add_argument("-s", "--system", required=True, help="system folder, searched recursively by both programs")
    p.add_argument("-f", "--frequency", type=int, default=1)
    p.add_argument("--atomic", action="store_true")
    p.add_argument("--relative", type=float, default=None)
    p.add_argument("--relative-v", type=float, default=None)
    p.add_argument("--real-error", action="store_true")
    p.add_argument("--dp", default="dp", help="the DeePMD-kit command (default: dp)")
    p.add_argument("--deeppot", default=f"{shlex.quote(sys.executable)} -m deeppot.cli.main",
                   help="the deeppot command (default: this Python's deeppot.cli.main)")
    p.add_argument("--device", default=None, help="deeppot's device (default: cuda when available)")
    p.add_argument("--workdir", default=None, help="where the .pth models and both outputs go (default: a temp dir)")
    args = p.parse_args(argv)
    if len(args.models) < 2:
        p.error("give at least two models")
    return args


def option_flags(args: argparse.Namespace) -> list[str]:
    """The model-devi options both programs take (DeePMD-kit's spellings, which deeppot accepts too)."""
    flags = ["-f", str(args.frequency)]
    flags += ["--atomic"] if args.atomic else []
    flags += ["--real_error"] if args.real_error else []
    flags += [] if args.relative is None else ["--relative", str(args.relative)]
    flags += [] if args.relative_v is None else ["--relative_v", str(args.relative_v)]
    return flags


def converted_names(models: list[str], work: Path) -> list[str]:
    """work/<stem>.pth for each model (indexed where stems repeat), so later runs in one workdir reuse them."""
    stems = [Path(m).stem for m in models]
    if len(set(stems)) < len(stems):
        stems = [f"{i}_{stem}" for i, stem in enumerate(stems)]
    return [str(work / f"{stem}.pth") for stem in stems]


def up_to_date(converted: Path, model: Path) -> bool:
    return converted.exists() and converted.stat().st_mtime >= model.stat().st_mtime


def run(command: list[str]) -> float:
    """Run a command; its wall time in seconds. Raises RuntimeError with the end of its output if it fails."""
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} failed ({proc.returncode}): {(proc.stdout + proc.stderr)[-2000:]}")
    return time.perf_counter() - start


def blocks(path: Path) -> dict[str, str]:
    """model_devi.out cut into its systems' blocks, keyed by the '# <system>' line."""
    out: dict[str, str] = {}
    key = ""
    for line in path.read_text().splitlines(keepends=True):
        if line.startswith("# ") and not line.startswith("# step"):
            key = line.strip()
        out[key] = out.get(key, "") + line
    return out


def values(block: str) -> np.ndarray:
    """The rows of one block (nf, 8 [+ natoms]) as float64."""
    rows = [line.split() for line in block.splitlines() if not line.startswith("#")]
    return np.array(rows, dtype=np.float64).reshape(len(rows), -1)


def column_differences(ours: np.ndarray, ref: np.ndarray) -> dict[str, dict[str, float]]:
    """Per column (the per-atom force deviations as one, atm_devi_f): max |ours - ref| and max relative to ref."""
    diff = np.abs(ours - ref)
    rel = np.where(diff == 0, 0.0, diff / np.maximum(np.abs(ref), np.finfo(np.float64).tiny))
    columns = {name: [i + 1] for i, name in enumerate(NAMES)}
    if ref.shape[1] > len(NAMES) + 1:
        columns["atm_devi_f"] = list(range(len(NAMES) + 1, ref.shape[1]))
    return {name: {"max_abs": float(diff[:, cols].max(initial=0.0)), "max_rel": float(rel[:, cols].max(initial=0.0)),
                   "max_ref": float(np.abs(ref[:, cols]).max(initial=0.0))} for name, cols in columns.items()}


def compare(ours_path: Path, ref_path: Path) -> dict:
    """Block-by-block comparison of two model_devi.out files."""
    ours, ref = blocks(ours_path), blocks(ref_path)
    if sorted(ours) != sorted(ref):
        return {"systems_equal": False, "ours": sorted(ours), "deepmd": sorted(ref)}
    per_system = []
    for key in ref:
        a, b = values(ours[key]), values(ref[key])
        if a.shape != b.shape:
            return {"systems_equal": True, "shape_mismatch": key, "ours": a.shape, "deepmd": b.shape}
        per_system.append((column_differences(a, b), bool(np.array_equal(a[:, 0], b[:, 0])), len(b)))
    columns = {name: {k: max(p[0][name][k] for p in per_system) for k in ("max_abs", "max_rel", "max_ref")}
               for name in per_system[0][0]}
    return {"systems_equal": True, "systems": len(ref), "frames": sum(p[2] for p in per_system),
            "steps_equal": all(p[1] for p in per_system), "identical_text": ours == ref, "columns": columns,
            "max_rel_all": max(c["max_rel"] for c in columns.values())}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="model_devi_"))
    work.mkdir(parents=True, exist_ok=True)
    dp, deeppot = shlex.split(args.dp), shlex.split(args.deeppot)
    pth = converted_names(args.models, work)
    result: dict = {"bench": "model_devi_vs_deepmd", "models": args.models, "system": args.system,
                    "options": option_flags(args), "workdir": str(work)}
    try:
        for model, converted in zip(args.models, pth, strict=True):
            if not up_to_date(Path(converted), Path(model)):
                run([*dp, "convert-backend", model, converted])
        ref_out, ours_out = work / "deepmd.out", work / "deeppot.out"
        for out in (ref_out, ours_out):
            out.unlink(missing_ok=True)  # both programs append
        result["deepmd_s"] = run([*dp, "--pt", "model-devi", "-m", *pth, "-s", args.system, "-o", str(ref_out),
                                  *option_flags(args)])
        device = [] if args.device is None else ["--device", args.device]
        result["deeppot_s"] = run([*deeppot, "model-devi", "-m", *args.models, "-s", args.system,
                                   "-o", str(ours_out), *option_flags(args), *device])
    except RuntimeError as err:
        print(json.dumps({**result, "error": str(err)}))
        return 1
    print(json.dumps({**result, **compare(ours_out, ref_out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
