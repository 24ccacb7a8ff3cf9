"""Run 130: the inference force/virial scatter (deeppot/kernels/scatter.py `_scatter_kernel`) on a real
98,304-atom water list (captured from one evaluation), launched with 1, 2, 4 and 8 warps a program."""
import json
import sys
from pathlib import Path

import torch
from triton.testing import do_bench

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, make_model, replicate

from deeppot.infer import Evaluator
from deeppot.kernels import scatter

coord, box, atype = load_frame(Path(".peer/data"), "water")
c, b, t = replicate(coord, box, atype, 8)
for precision in ("float32", "float64"):
    ev = Evaluator(make_model(Path(".peer/inputs"), "water", precision), device="cuda")
    dev, n = ev.device, len(t)
    flat = ev.neighbors(torch.as_tensor(c, device=dev).reshape(1, n, 3),
                        torch.as_tensor(t, device=dev).reshape(1, n), torch.as_tensor(b, device=dev).reshape(1, 3, 3))
    captured = []
    ev.scatter = lambda *args: (captured.append(args), scatter.scatter_forces_and_virial(*args))[1]  # noqa: B023
    ev.evaluate_neighbors(flat)
    force, virial, g, rij, nlist_loc, start = captured[0]
    g, rij, nlist_loc = g.contiguous(), rij.contiguous(), nlist_loc.contiguous()
    row = dict(precision=precision, centres=len(nlist_loc), nnei=nlist_loc.shape[1], calls=len(captured))
    for warps in (1, 2, 4, 8):
        meta = dict(NNEI=scatter.triton.next_power_of_2(nlist_loc.shape[1]), num_warps=warps)
        launch = scatter._scatter_kernel[(len(nlist_loc),)]
        args = (g, rij, nlist_loc, force, virial, start, nlist_loc.shape[1])
        ms = do_bench(lambda: launch(*args, **meta), rep=200)  # noqa: B023 (run at once, in this iteration)
        row[f"warps{warps}_ms"] = round(ms, 4)
    print(json.dumps(row), flush=True)
