"""Run 193: after the skin list takes its candidates from `build_candidates` (every atom within rcut + skin, no
per-type capacity, no selection) and the type split is sort-free: the pair kernel against its PyTorch twin in one
process, build_cell_list at rcut 6 (DeepPot.eval's list) and build_candidates at rcut 8 (an MD rebuild's
candidates), equal outputs, median ms, peak memory, and a profile of the rcut-6 build by CUDA time.
Usage: python build_probe.py [NATOMS ...]"""
# ruff: noqa: B023 (each lambda is timed at once, inside its loop iteration)
import json
import statistics
import sys
import time

import torch
from nlist_bench import water_box
from torch.profiler import ProfilerActivity, profile

from deeppot.nlist import cell_list

kernel_rows = cell_list._pair_rows_on(torch.device("cuda"))
assert kernel_rows is not cell_list.pair_rows
BUILDS = {"cell_rcut6": lambda c, t, b: cell_list.build_cell_list(c, t, b, 6.0, [46, 92]),
          "candidates_rcut8": lambda c, t, b: cell_list.build_candidates(c, t, b, 8.0)}


def run(name, coord, atype, box, rows):
    cell_list._pair_rows_on = lambda device: rows
    return BUILDS[name](coord, atype, box)


def ms(work, n=5):
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        t = time.perf_counter()
        work()
        torch.cuda.synchronize()
        times.append(1e3 * (time.perf_counter() - t))
    return round(statistics.median(times), 2)


for natoms in [int(a) for a in sys.argv[1:]] or [98304]:
    coord, atype, box = water_box(natoms, torch.device("cuda"), torch.float64)
    for name in BUILDS:
        row = {"atoms": coord.shape[1], "build": name, "gpu": torch.cuda.get_device_name()}
        got = run(name, coord, atype, box, kernel_rows)
        if natoms <= 200_000:
            want = run(name, coord, atype, box, cell_list.pair_rows)
            row["equal"] = all(torch.equal(g, w) for g, w in zip(got, want, strict=True))
            row["twin_ms"] = ms(lambda: run(name, coord, atype, box, cell_list.pair_rows))
        row["kernel_ms"] = ms(lambda: run(name, coord, atype, box, kernel_rows))
        torch.cuda.reset_peak_memory_stats()
        run(name, coord, atype, box, kernel_rows)
        row["kernel_peak_MiB"] = round(torch.cuda.max_memory_allocated() / 2**20)
        print(json.dumps(row), flush=True)
        if name == "cell_rcut6" and natoms == 98304:
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                run(name, coord, atype, box, kernel_rows)
                torch.cuda.synchronize()
            print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=14, max_name_column_width=50))
