"""Run 94: FlatAdam's copy of the gradients into its flat buffer: one torch.cat with the padding pieces (as
committed) against torch._foreach_copy_ into views of the buffer; each replayed from a CUDA graph, us."""
import json
import sys

import torch

from deeppot.train import adam

sys.path.insert(0, "benchmarks/results/run92")
from adam_flat import MODELS, make, timed


def copies(name: str, dtype, shapes) -> dict:
    _, opt = make(adam.FlatAdam, dtype, shapes)
    flat = opt.flats[0]
    views, start = [], 0
    for p, (_, pad) in zip(flat.params, flat._fill, strict=True):
        views.append(flat.grad[start:start + p.numel()].view_as(p))
        start += p.numel() + pad.numel()
    grads = [p.grad for p in flat.params]
    return {"case": name, "cat_us": timed(flat.gather_grads),
            "foreach_copy_us": timed(lambda: torch._foreach_copy_(views, grads))}


for name, (dtype, shapes) in MODELS.items():
    print(json.dumps(copies(name, dtype, shapes)), flush=True)
