"""Run 245: how much of the float32 (f16x3) atom-tile gradient kernel a same-type pair list would save. A pair
(i, j) of one type uses one net both ways (s_ij = s_ji, R_ji = P R_ij with P = diag(1, -1, -1, -1)), so one of its
two slots could carry both: dE/dT_i + P dE/dT_j in place of dE/dT_i, the other slot not visited. This probe only
bounds the gain: the kernel alone (run 238's harness, 98,304 atoms of compress_bench.py's water-like box) with the
same-type blocks' reach halved (half the slots walked, no partner gathers: its output is wrong by design), and
with every block's reach halved (what a one-type system such as copper would walk)."""
import json
import os
from functools import partial

import torch
from compress_bench import box_pairs, model_pair, timed

from deeppot.kernels import atom_tiles
from deeppot.kernels.precision import float32_products
from deeppot.kernels.reach import Reach, find_reach

torch.set_grad_enabled(False)
torch.manual_seed(0)
ATOMS, DEVICE = int(os.environ.get("ATOMS", 98304)), torch.device(os.environ.get("DEVICE", "cuda"))  # CPU: a check
ev, flat, rij, t_bar = box_pairs(model_pair("float32")[0], ATOMS, DEVICE)
d, ct = ev.model.descriptor, flat.center_type
products = float32_products(ev.model, rij.device)
full = find_reach(d, ct, flat.neighbor_owner_and_type(0, flat.ncentre)[1])
same = ct.long()[:, None] == torch.arange(full.reach.shape[1], device=ct.device)[None, :]
variants = {"full": full,
            "same-type halved": Reach(torch.where(same, (full.reach + 1) // 2, full.reach).contiguous(), full.last, {}),
            "all halved": Reach(((full.reach + 1) // 2).contiguous(), full.last, {})}


def grad_call(reach, rows, spare):
    return atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, products, reach, spare.copy_(rows))


sync = torch.cuda.synchronize if rij.is_cuda else (lambda: None)
for _ in range(3):
    for name, reach in variants.items():
        rows = atom_tiles.shared_rows(d, rij, ct, reach, products)["rows"]
        spare = rows.clone()
        copy_ms = timed(partial(spare.copy_, rows), sync)
        ms = timed(partial(grad_call, reach, rows, spare), sync) - copy_ms
        t_ms = timed(partial(atom_tiles.descriptor_t, d, rij, ct, products, reach, rows), sync)
        print(json.dumps({"variant": name, "slots_walked": int(reach.reach.sum()), "grad_ms": round(ms, 3),
                          "t_ms": round(t_ms, 3)}), flush=True)
