"""How close the compressed kernels are to the bytes they must read: the table kernels of
`deeppot.kernels.compressed` against a kernel that only streams the same table rows (each slot's 6 x M1
coefficients, found as the T kernel finds them, read as one contiguous coalesced row and summed), and against the
same stream with every slot on table row 0 (always in L1); the table kernels themselves with every lookup sent to
their net's first row (`*_row0`: what they cost beyond reading their rows from L2). One JSON line per kernel, with
the bytes of table rows a call reads and the rate it reads them at.

Water-like box of benchmarks/compress_bench.py (no data files), on a GPU:
    PYTHONPATH=$PWD:$PWD/benchmarks python benchmarks/table_roofline.py --atoms 98304 > roofline.jsonl
"""

from __future__ import annotations

import argparse
import json

import torch
import triton
import triton.language as tl
from compress_bench import box_pairs, model_pair, timed

from deeppot.kernels import compressed
from deeppot.kernels.compressed import _table_rows
from deeppot.kernels.env_rows import _env_rows, env_args
from deeppot.kernels.reach import tile_tops

STREAM_BLOCK = 16  # slots a chunk, one atom a program: the table kernels' layout when run 45 measured them


@triton.jit
def _stream_rows_kernel(rij_ptr, type_ptr, stat_ptr, geo_ptr, starts_ptr, top_ptr, table_ptr, info_ptr, out_ptr,
                        nnei, nstat, M1: tl.constexpr, W: tl.constexpr, NTYPES: tl.constexpr, ONE_SIDE: tl.constexpr,
                        BLOCK: tl.constexpr, MAX_SEL: tl.constexpr, ROW0: tl.constexpr):
    centre = tl.program_id(0).to(tl.int64)
    ctype = tl.load(type_ptr + centre)
    word = tl.arange(0, W)
    acc = (word * 0).to(table_ptr.dtype.element_ty)
    for b in range(NTYPES):
        k = b if ONE_SIDE else ctype + b * NTYPES
        start = tl.load(starts_ptr + b)
        length = tl.load(starts_ptr + b + 1) - start
        for j0 in range(0, MAX_SEL, BLOCK):
            if j0 < length:
                rows = j0 + tl.arange(0, BLOCK)
                live = rows < length
                s = _env_rows(rij_ptr, stat_ptr, geo_ptr, centre, ctype, start + rows, live, nnei, nstat)[0]
                row = _table_rows(info_ptr, k, s)[0]
                if ROW0:
                    row = row * 0
                at = table_ptr + row[:, None] * (6 * M1) + word[None, :]
                acc += tl.sum(tl.load(at, mask=live[:, None] & (word < 6 * M1)[None, :], other=0.0), axis=0)
    tl.store(out_ptr + centre, tl.sum(acc, axis=0))


def stream_rows(d, rij, center_type, row0: bool) -> torch.Tensor:
    tensors = [*env_args(d, rij, center_type, tile_tops(d, None, center_type, 1, 0)),
               *compressed.packed_tables(d.tables, d.dtype, rij.device)]
    n, nnei = rij.shape[:2]
    out = rij.new_empty(n)
    m1 = d.neuron[-1]
    _stream_rows_kernel[(n,)](*tensors, out, nnei, d.davg.numel(), M1=m1, W=triton.next_power_of_2(6 * m1),
                              NTYPES=d.ntypes, ONE_SIDE=d.type_one_side, BLOCK=STREAM_BLOCK, MAX_SEL=max(d.sel),
                              ROW0=row0, num_warps=4)
    return out


def timed_on_row0(d, fn) -> float:
    """fn timed with the packed tables' lookup constants changed so that every s falls in its net's first interval
    (one step of 1e5 from -1e4): the same loads and arithmetic, every row from L1."""
    cache = d.tables.__dict__["_packed"]
    key = next(k for k in cache if k[0] == d.dtype)
    table, info = cache[key]
    fake = info.clone()
    fake[:, 0], fake[:, 1], fake[:, 2], fake[:, 3] = -1e4, 1e4, 1e4, 1e5
    cache[key] = (table, fake)
    try:
        return timed(fn, sync)
    finally:
        cache[key] = (table, info)


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def measure(precision: str, natoms: int, device: str) -> None:
    _, model = model_pair(precision)
    ev, flat, rij, t_bar = box_pairs(model, natoms, device)
    n, d = flat.ncentre, ev.model.descriptor
    row_bytes = rij.shape[0] * rij.shape[1] * 6 * d.neuron[-1] * rij.element_size()  # every slot reads one row
    calls = {"t_kernel": lambda: compressed.compressed_descriptor_t(d, rij, flat.center_type),
             "grad_kernel": lambda: compressed.compressed_pair_grad(d, rij, flat.center_type, t_bar),
             "stream_rows": lambda: stream_rows(d, rij, flat.center_type, False),
             "stream_row0": lambda: stream_rows(d, rij, flat.center_type, True)}
    times = {name: timed(fn, sync) for name, fn in calls.items()}
    times["t_kernel_row0"] = timed_on_row0(d, calls["t_kernel"])
    times["grad_kernel_row0"] = timed_on_row0(d, calls["grad_kernel"])
    for name, ms in times.items():
        print(json.dumps({"case": f"water:{precision}:{n}:compressed", "kernel": name, "ms": ms,
                          "table_row_bytes": row_bytes, "TB_per_s": row_bytes / ms / 1e9}), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--atoms", type=int, nargs="+", default=[98304])
    parser.add_argument("--precision", nargs="+", default=["float32"])
    parser.add_argument("--device", default="cuda", help="cpu: a dry run under TRITON_INTERPRET=1")
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    for precision in args.precision:
        for natoms in args.atoms:
            measure(precision, natoms, args.device)
