"""Run 51: the compressed gradient kernel with its four row sums as four tl.sum calls (before) against one joint
tl.reduce over the four products (kept), on the water of benchmarks/compress_tiles.py; also the largest difference
between the two. The kernel's JOINT switch existed for this run only: the script does not run against the kept
kernel (a record of how run 51 was measured)."""

import argparse
import json

import compress_tiles as ct
import torch
from compress_bench import timed

from deeppot.kernels import compressed as K

torch.set_grad_enabled(False)
args = argparse.Namespace(data=".peer/data", inputs=".peer/inputs", atoms=98304)
for precision, tiles in (("float32", [(1, 16, 4), (1, 8, 4), (8, 2, 4), (4, 4, 4)]),
                         ("float64", [(4, 4, 4), (1, 16, 4), (8, 2, 4)])):
    ev, flat = ct.compressed_water(args, precision, torch.device("cuda"))
    d = ev.model.descriptor
    rij = flat.pair_vectors(0, flat.ncentre, d.rcut).to(d.dtype)
    tb = torch.randn(flat.ncentre, 4, d.neuron[-1], dtype=d.dtype, device="cuda")
    for tile in tiles:
        K.TILES[getattr(torch, precision)]["grad"] = tile
        row, out = {"precision": precision, "tile": tile}, {}
        for joint in (False, True):
            K.JOINT = joint
            fn = lambda: K.compressed_pair_grad(d, rij, flat.center_type, tb)  # noqa: E731, B023 (called at once)
            row[f"grad_ms_joint{int(joint)}"] = timed(fn, torch.cuda.synchronize)
            out[joint] = fn()
        K.JOINT = False
        row["max_rel_diff"] = float((out[True] - out[False]).abs().max() / out[False].abs().max())
        print(json.dumps(row), flush=True)
