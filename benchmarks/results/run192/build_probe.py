"""Run 192: the cell list's pair kernel (deeppot/kernels/cell_pairs.py) against its PyTorch twin in one process,
on replicated water boxes: build_cell_list at rcut 6 (sel [46, 92], what DeepPot.eval builds) and at rcut 8 with
the skin list's capacities (what an MD rebuild builds), equal outputs, median ms, and a profile of the kernel
path's rcut-8 build (CUDA time by op). Usage: python build_probe.py [NATOMS ...]"""
# ruff: noqa: B023 (each lambda is timed at once, inside its loop iteration)
import json
import statistics
import sys
import time

import torch
from nlist_bench import water_box
from torch.profiler import ProfilerActivity, profile

from deeppot.infer.neighbors import default_capacity
from deeppot.nlist import cell_list

kernel_rows = cell_list._pair_rows_on(torch.device("cuda"))
assert kernel_rows is not cell_list.pair_rows


def build(coord, atype, box, rcut, sel, rows):
    cell_list._pair_rows_on = lambda device: rows
    return cell_list.build_cell_list(coord, atype, box, rcut, sel)


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
    for rcut, sel in ((6.0, [46, 92]), (8.0, default_capacity([46, 92], 6.0, 2.0))):
        row = {"atoms": coord.shape[1], "rcut": rcut, "gpu": torch.cuda.get_device_name()}
        got = build(coord, atype, box, rcut, sel, kernel_rows)
        if natoms <= 200_000:
            want = build(coord, atype, box, rcut, sel, cell_list.pair_rows)
            row["equal"] = all(torch.equal(g, w) for g, w in zip(got, want, strict=True))
            row["twin_ms"] = ms(lambda: build(coord, atype, box, rcut, sel, cell_list.pair_rows))
        row["kernel_ms"] = ms(lambda: build(coord, atype, box, rcut, sel, kernel_rows))
        torch.cuda.reset_peak_memory_stats()
        build(coord, atype, box, rcut, sel, kernel_rows)
        row["kernel_peak_MiB"] = round(torch.cuda.max_memory_allocated() / 2**20)
        print(json.dumps(row), flush=True)
        if rcut == 8.0 and natoms == 98304:
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                build(coord, atype, box, rcut, sel, kernel_rows)
                torch.cuda.synchronize()
            print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=22, max_name_column_width=50))
