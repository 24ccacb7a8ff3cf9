"""Neighbour-list micro-benchmark: build and update of the Verlet-skin list on replicated water boxes.

The 192-atom water frame of examples/water/data/data_0 (frame 0, cubic 12.44 A box) replicated a x b x c times to
about each --sizes atom count (the nearest near-cubic replication: 1,000,000 -> 998,784 atoms). Prints one JSON line
per case with case, atoms, build_ms, update_ms, peak_mem_MiB, device, tool, and:
  tool "deeppot-skin": SkinNeighborList (rcut 6, sel [46, 92], skin 2); build_ms = `build` (cell list of radius
      rcut + skin, ghosts, candidates); update_ms = `update` after moves below skin / 2 (ghosts from owner + shift,
      re-selection of the DeePMD list), eagerly; update_graph_ms = the same replayed from a CUDA graph (GPU only);
      update_unsorted_ms = `update` of a list built with sort=False (every neighbour within rcut in candidate
      order, what MD uses); pairs = pairs within rcut in the list.
  tool "deeppot-cell" (--cell): build_neighbor_data(method="cell") at rcut, what a step without a skin pays;
      build_ms only.
  tool "vesin-torch" (--vesin): vesin's full neighbour list (i, j, shift) with cutoff rcut on the same device;
      build_ms = one compute without skin; update_ms = compute with its own skin caching (skin 2) after the same
      moves; pairs should equal deeppot's.
Times are medians of --repeats calls (CUDA: synchronised); peak_mem_MiB is torch.cuda.max_memory_allocated for
the case on a GPU and the process's peak resident memory so far on a CPU (cases run from small to large).

    python benchmarks/nlist_bench.py [--device cuda] [--sizes 1536 12288 98304 1000000] [--vesin] [--cell]
        [--dtype float32]
Defaults: CUDA when available; sizes 1536 12288 on a CPU, up to 1,000,000 on a GPU.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import itertools
import json
import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from deeppot.infer.neighbors import SkinNeighborList
from deeppot.nlist import build_neighbor_data

WATER = Path(__file__).resolve().parents[1] / "examples" / "water" / "data" / "data_0"
CPU_SIZES = [1536, 12288]
GPU_SIZES = [1536, 12288, 98304, 1_000_000]


def replication(natoms: int, base: int) -> tuple[int, int, int]:
    """The near-cubic (a, b, c), a <= b <= c <= a + 2, whose a*b*c*base is nearest to natoms."""
    n = round((natoms / base) ** (1 / 3))
    candidates = [r for r in itertools.product(range(max(1, n - 2), n + 3), repeat=3)
                  if r[0] <= r[1] <= r[2] <= r[0] + 2]
    return min(candidates, key=lambda r: (abs(r[0] * r[1] * r[2] * base - natoms), r))


def water_box(natoms: int, device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """coord (1, N, 3), atype (1, N), box (1, 3, 3) of the water frame replicated to about natoms atoms."""
    coord = np.load(WATER / "set.000" / "coord.npy")[0].reshape(-1, 3).astype(np.float64)
    box = np.load(WATER / "set.000" / "box.npy")[0].reshape(3, 3).astype(np.float64)
    atype = np.loadtxt(WATER / "type.raw", dtype=np.int64)
    reps = replication(natoms, len(atype))
    shifts = np.array(list(itertools.product(*(range(r) for r in reps)))) @ box  # (ncopies, 3)
    big = (coord[None] + shifts[:, None]).reshape(-1, 3)
    big_box = box * np.array(reps)[:, None]
    big_type = np.tile(atype, len(shifts))
    as_t = lambda x, dt: torch.tensor(x, dtype=dt, device=device)[None]  # noqa: E731
    return as_t(big, dtype), as_t(big_type, torch.int64), as_t(big_box, dtype)


def small_moves(coord: torch.Tensor, max_move: float, seed: int = 0) -> torch.Tensor:
    """coord moved by random vectors shorter than max_move (a few MD steps' worth of motion)."""
    gen = torch.Generator().manual_seed(seed)
    step = (torch.rand(coord.shape, generator=gen, dtype=torch.float64) * 2 - 1) * max_move / 3**0.5
    return coord + step.to(coord.device, coord.dtype)


def timed(fn: Callable[[], object], repeats: int, device: torch.device) -> float:
    """Median wall time of fn in ms, synchronising the device around each call."""
    times = []
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        fn()
        sync(device)
        times.append(1e3 * (time.perf_counter() - start))
    return statistics.median(times)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def graph_update_ms(nl: SkinNeighborList, coord: torch.Tensor, repeats: int) -> float:
    """Median time of `update` replayed from a CUDA graph (static coordinates buffer)."""
    static = coord.clone()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        nl.update(static)  # warm-up on a side stream, as capture requires
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        nl.update(static)
    graph.replay()
    return timed(graph.replay, repeats, coord.device)


def start_case(device: torch.device) -> None:
    sync(device)
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def peak_mib(device: torch.device) -> float:
    if device.type == "cuda":
        return round(torch.cuda.max_memory_allocated(device) / 2**20, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10, 1)  # kB on Linux


def bench_skin(coord, atype, box, args) -> dict:
    device = coord.device
    start_case(device)
    nl = SkinNeighborList(args.rcut, args.sel, args.skin)
    nl.build(coord, atype, box, check_overflow=False)  # warm-up
    build_ms = timed(lambda: nl.build(coord, atype, box, check_overflow=False), args.build_repeats, device)
    moved = small_moves(coord, 0.45 * args.skin)
    update_ms = timed(lambda: nl.update(moved), args.repeats, device)
    data = nl.update(moved)
    unsorted = SkinNeighborList(args.rcut, args.sel, args.skin, sort=False)
    unsorted.build(coord, atype, box, check_overflow=False)
    result = {"build_ms": round(build_ms, 3), "update_ms": round(update_ms, 3),
              "update_unsorted_ms": round(timed(lambda: unsorted.update(moved), args.repeats, device), 3),
              "pairs": int((data.nlist >= 0).sum()), "candidates": nl.ref.candidates.shape[-1],
              "rebuild_needed": bool(nl.needs_rebuild(moved))}
    if device.type == "cuda" and not args.no_graph:
        result["update_graph_ms"] = round(graph_update_ms(nl, moved, args.repeats), 3)
    result["peak_mem_MiB"] = peak_mib(device)
    return result


def bench_cell(coord, atype, box, args) -> dict:
    """The plain cell list at rcut, what a step without a skin list pays for its neighbours."""
    device = coord.device
    start_case(device)
    build = lambda: build_neighbor_data(coord, atype, box, args.rcut, args.sel, "cell", check_overflow=False)  # noqa: E731
    build()  # warm-up
    result = {"build_ms": round(timed(build, args.build_repeats, device), 3), "update_ms": None,
              "pairs": int((build().nlist >= 0).sum())}
    result["peak_mem_MiB"] = peak_mib(device)
    return result


def bench_vesin(coord, box, args) -> dict:
    from vesin_torch import NeighborList  # optional dependency: pip install vesin-torch

    device = coord.device
    start_case(device)
    points, cell = coord[0], box[0]
    plain = NeighborList(cutoff=args.rcut, full_list=True)
    plain.compute(points, cell, periodic=True, quantities="ijS")  # warm-up (CUDA: kernel compilation)
    build_ms = timed(lambda: plain.compute(points, cell, periodic=True, quantities="ijS"), args.build_repeats,
                     device)
    i, _, _ = plain.compute(points, cell, periodic=True, quantities="ijS")
    result = {"build_ms": round(build_ms, 3), "pairs": int(i.shape[0]), "update_ms": None}
    moved = small_moves(coord, 0.45 * args.skin)[0]
    try:
        cached = NeighborList(cutoff=args.rcut, full_list=True, skin=args.skin)
        cached.compute(points, cell, periodic=True, quantities="ijS")
        result["update_ms"] = round(timed(lambda: cached.compute(moved, cell, periodic=True, quantities="ijS"),
                                          args.repeats, device), 3)
    except (RuntimeError, TypeError, ValueError) as err:  # skin caching may be unsupported on this device
        result["update_error"] = str(err).splitlines()[0][:200]
    result["peak_mem_MiB"] = peak_mib(device)
    return result


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--sizes", type=int, nargs="+", help="target atom counts (default by device)")
    parser.add_argument("--rcut", type=float, default=6.0)
    parser.add_argument("--sel", type=int, nargs="+", default=[46, 92])
    parser.add_argument("--skin", type=float, default=2.0)
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    parser.add_argument("--repeats", type=int, default=20, help="timed update calls per case")
    parser.add_argument("--build-repeats", type=int, default=3, help="timed build calls per case")
    parser.add_argument("--vesin", action="store_true", help="also time vesin-torch's neighbour list")
    parser.add_argument("--cell", action="store_true", help="also time the plain cell list at rcut (no skin)")
    parser.add_argument("--no-graph", action="store_true", help="GPU: skip the CUDA-graph update timing")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    device = torch.device(args.device)
    sizes = args.sizes or (GPU_SIZES if device.type == "cuda" else CPU_SIZES)
    dtype = getattr(torch, args.dtype)
    vesin_version = importlib.metadata.version("vesin-torch") if args.vesin else None
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    for size in sizes:
        coord, atype, box = water_box(size, device, dtype)
        common = {"case": f"water-{size}", "atoms": coord.shape[1], "device": name, "dtype": args.dtype,
                  "rcut": args.rcut, "skin": args.skin, "sel": args.sel}
        print(json.dumps({**common, "tool": "deeppot-skin", **bench_skin(coord, atype, box, args)}), flush=True)
        if args.cell:
            print(json.dumps({**common, "tool": "deeppot-cell", **bench_cell(coord, atype, box, args)}), flush=True)
        if vesin_version is not None:
            result = bench_vesin(coord, box, args)
            print(json.dumps({**common, "tool": f"vesin-torch {vesin_version}", **result}), flush=True)


if __name__ == "__main__":
    main()
