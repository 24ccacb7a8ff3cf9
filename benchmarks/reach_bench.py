"""What visiting each neighbour block only up to its last neighbour saves (`deeppot.kernels.reach`), part by part.

Per system and precision, on the first frame of --data replicated to >= --atoms with environment statistics from
that frame: the share of slots the kernels visit (per atom, and per tile of the T and gradient kernels), the
host-side reach, each kernel visiting every slot and only up to each tile's furthest neighbour (the T kernel with
its tail), and the whole evaluation;
uncompressed, then compressed. One JSON line per case and family. On a GPU:
    PYTHONPATH=$PWD:$PWD/benchmarks python benchmarks/reach_bench.py --data .peer/data --inputs .peer/inputs
"""

from __future__ import annotations

import argparse
import json

import torch
from compress_bench import timed
from infer_bench import frame_min_dist, make_model, supercells

from deeppot.infer.deep_pot import Evaluator
from deeppot.kernels import atom_tiles, compressed, descriptor
from deeppot.kernels.reach import find_reach
from deeppot.model.stats import davg_dstd_from_sums, env_stat_sums


def frame_model(args, system: str, precision: str, device):
    """A model with the supercell's statistics (as training sets them) and the supercell's neighbour list."""
    _, _, coord, box, atype = next(supercells(args.data, system, [args.atoms]))
    model = make_model(args.inputs, system, precision).to(device)
    as_t = lambda a, dt: torch.as_tensor(a, dtype=dt, device=device)[None]  # noqa: E731
    flat = Evaluator(model, device).neighbors(as_t(coord, torch.float64), as_t(atype, torch.int64),
                                              as_t(box, torch.float64))
    d = model.descriptor
    owner = flat.neighbor_owner_and_type(0, flat.ncentre)[0]
    sums = env_stat_sums(flat.pair_vectors(0, flat.ncentre, d.rcut)[None], owner[None], flat.center_type[None],
                         d.ntypes, d.rcut, d.rcut_smth, d.env_protection)
    davg, dstd = davg_dstd_from_sums(sums.cpu(), sum(d.sel))
    d.davg.copy_(davg.to(d.davg)), d.dstd.copy_(dstd.to(d.dstd))
    return model, flat


def tile_share(reach: torch.Tensor, sel: list[int], atoms: int, slots: int) -> float:
    """Rows a kernel of (atoms, slots) tiles computes, as a share of visiting every slot."""
    n = reach.shape[0] // atoms * atoms
    top = reach[:n].view(-1, atoms, reach.shape[1]).amax(1).double()
    width = torch.tensor(sel, dtype=torch.float64, device=reach.device)
    return float(((top / slots).ceil() * slots).sum() / ((width / slots).ceil() * slots).sum() / (n // atoms))


def family_row(ev, flat, d, t_kernel, grad_kernel, tiles, sync) -> dict:
    n, ct = flat.ncentre, flat.center_type
    rij = flat.pair_vectors(0, n, d.rcut).to(d.dtype)
    reach = find_reach(d, ct, flat.neighbor_owner_and_type(0, n)[1])
    t_bar = torch.randn(n, 4, d.neuron[-1], dtype=d.dtype, device=rij.device)
    row = {f"{k}_tile_share": round(tile_share(reach.reach.long(), d.sel, *tiles[k][:2]), 4) for k in tiles}
    row.update(t_ms_all=timed(lambda: t_kernel(d, rij, ct), sync),
               t_ms_reach=timed(lambda: t_kernel(d, rij, ct, reach=reach), sync),
               grad_ms_all=timed(lambda: grad_kernel(d, rij, ct, t_bar), sync),
               grad_ms_reach=timed(lambda: grad_kernel(d, rij, ct, t_bar, reach=reach), sync),
               whole_ms=timed(lambda: ev.evaluate_neighbors(flat), sync))
    row["atom_steps_per_s"] = round(n / row["whole_ms"] * 1e3, 1)
    return row


def tiles_of(dtype, family: str) -> dict:
    if family == "compressed":
        return compressed.TILES[dtype]
    one_atom = {k: (1, v[0], v[1]) for k, v in descriptor.TILES.items()}
    return {k: atom_tiles.TILES[dtype].get(k, one_atom[k]) for k in ("t", "grad")}


def cases(args, system: str, precision: str):
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    model, flat = frame_model(args, system, precision, device)
    d, n = model.descriptor, flat.ncentre
    neighbor_type = flat.neighbor_owner_and_type(0, n)[1]
    reach = find_reach(d, flat.center_type, neighbor_type).reach
    base = {"case": f"{system}:{precision}:{n}", "atom_share": round(float(reach.sum() / (n * sum(d.sel))), 4),
            "reach_ms": timed(lambda: find_reach(d, flat.center_type, neighbor_type), sync)}
    kernels = (descriptor.descriptor_t, descriptor.pair_grad_from_t_bar)
    yield {**base, **family_row(Evaluator(model, device), flat, d, *kernels, tiles_of(d.dtype, "net"), sync)}
    d.enable_compression(frame_min_dist(args.data, system))
    kernels = (compressed.compressed_descriptor_t, compressed.compressed_pair_grad)
    row = family_row(Evaluator(model, device), flat, d, *kernels, tiles_of(d.dtype, "compressed"), sync)
    yield {**base, "case": base["case"] + ":compressed", **row}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="the benchmark data folder (water/...)")
    p.add_argument("--inputs", required=True, help="the reference input.json folder")
    p.add_argument("--atoms", type=int, default=98304)
    p.add_argument("--systems", nargs="+", default=["water", "copper", "alloy"])
    p.add_argument("--precisions", nargs="+", default=["float32", "float64"])
    p.add_argument("--device", default="cuda", help="cpu: a dry run under TRITON_INTERPRET=1")
    args = p.parse_args()
    torch.set_grad_enabled(False)
    for system in args.systems:
        for precision in args.precisions:
            for row in cases(args, system, precision):
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
