"""Run 134 probe: would inference gain from computing G and dG/ds once and storing them (the training forward's
kernels, `analytic.energy_and_pair_grad` with every Triton twin swapped in), against the two atom-tile kernels that
recompute the net (`descriptor.fused_pair_stage`)? The water-like box of compress_bench.py, chunks of atoms.
One JSON line per measurement: ms a chunk of the whole pair stage and of its pieces."""

from __future__ import annotations

import json
import os
import sys

import torch
from compress_bench import box_pairs, model_pair, timed

from deeppot.kernels import atom_tiles, descriptor
from deeppot.kernels.reach import find_reach
from deeppot.model import analytic

dev = torch.device(os.environ.get("PROBE_DEVICE", "cuda"))
sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
ATOMS = int(os.environ.get("PROBE_ATOMS", 98304))


def pieces(model, rij, nl, ct, nt, t_bar):
    d = model.descriptor
    args = rij[None], nl[None], ct[None], nt[None]
    rows = model.env_fn(d, *args)
    g, dg = model.embed_fn(d, rows.rr, ct[None])
    out = {"env_ms": timed(lambda: model.env_fn(d, *args), sync),
           "embed_ms": timed(lambda: model.embed_fn(d, rows.rr, ct[None]), sync),
           "t_bmm_ms": timed(lambda: torch.einsum("fnjc,fnjm->fncm", rows.rr, g), sync),
           "pair_grad_ms": timed(lambda: model.pair_grad_fn(d, rows, g, dg, t_bar[None]), sync)}
    reach = find_reach(d, ct, nt)
    out["tiles_t_ms"] = timed(lambda: atom_tiles.descriptor_t(d, rij, ct, reach=reach), sync)
    out["tiles_grad_ms"] = timed(lambda: atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, reach=reach), sync)
    return out


def main() -> None:
    for precision in sys.argv[1:] or ["float32", "float64"]:
        model = model_pair(precision)[0]
        ev, flat, rij, t_bar = box_pairs(model, ATOMS, dev)
        m = ev.model
        for use in (m.use_fused_kernels, m.use_env_kernel, m.use_pair_grad_kernel, m.use_fitting_kernel):
            assert use(dev), use
        nl, nt = flat.neighbor_owner_and_type(0, flat.ncentre)
        ct = flat.center_type
        for chunk in (min(16384, ATOMS), ATOMS):
            s = slice(0, chunk)
            a = rij[s], nl[s], ct[s], nt[s]
            with torch.no_grad():
                e0, g0 = descriptor.fused_pair_stage(m, *a)
                e1, g1 = analytic.energy_and_pair_grad(m, *(x[None] for x in a))
                row = {"precision": precision, "chunk": chunk,
                       "energy_dev": float((e1[0] - e0).abs().max()), "grad_dev": float(
                           (g1[0] - g0).abs().max() / g0.abs().max()),
                       "tiles_stage_ms": timed(lambda a=a, m=m: descriptor.fused_pair_stage(m, *a), sync),
                       "stored_stage_ms": timed(lambda a=a, m=m: analytic.energy_and_pair_grad(
                           m, *(x[None] for x in a)), sync)}
                if dev.type == "cuda":
                    torch.cuda.reset_peak_memory_stats()
                    analytic.energy_and_pair_grad(m, *(x[None] for x in a))
                    row["stored_peak_MiB"] = torch.cuda.max_memory_allocated() / 2**20
                row.update(pieces(m, *a, t_bar[s]))
            print(json.dumps(row), flush=True)
            del e0, g0, e1, g1


if __name__ == "__main__":
    main()
