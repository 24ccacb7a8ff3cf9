"""Run 119: why the training embedding backward kernel costs what it does. Variants of deeppot/kernels/embedding.py
are written as patched copies and imported side by side; each (forward, backward) pair is timed from a CUDA graph
(benchmarks/embed_kernel_bench.py's shapes and timer). Diagnostic only: "store-only" gives wrong gradients.
    python benchmarks/results/run119/bwd_variants.py [--precision float32]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))
import embed_kernel_bench as bench  # noqa: E402

SOURCE = (ROOT / "deeppot/kernels/embedding.py").read_text()

STORE_ONLY = [  # the partial sums written, not read-modify-written, every chunk
    ("tl.store(at, tl.load(at, mask=ok, other=0.0) + value, mask=ok)", "tl.store(at, value, mask=ok)"),
    ("tl.store(ptr + col, tl.load(ptr + col, mask=ok, other=0.0) + value, mask=ok)",
     "tl.store(ptr + col, value, mask=ok)"),
]
NO_WEIGHT_GRADS = [  # no weight-gradient GEMMs: only the backward's data path (gx, gdx) and the bias sums
    ("        gw = tl.dot(tl.trans(x), gz, input_precision=PRECISION)\n"
     "        gw += tl.dot(tl.trans(dx), gu, input_precision=PRECISION)\n",
     "        gw = tl.zeros((x.shape[1], gz.shape[1]), dtype=gz.dtype)\n"),
]
STORED_G = [  # layer 3 read back from the forward's G and dG/ds (run 115's variant)
    ("        gz = (gx - 2.0 * gdx * u * a) * d\n", "        gz = gx * d - 2.0 * gdx * u * a\n"),
    ("""        a2, u2, d2, x2, dx2 = _dense_jet(x1, dx1, w2, b2, SKIP2, PRECISION)
        w3 = _load_matrix(w3_ptr, k, N2, N3, L2[0], L2[1], L2[2], L3[0], L3[1], L3[2])
        b3 = _load_vector(b3_ptr, k, N3, L3[0], L3[1], L3[2])
        a3, u3, d3 = _dense_jet(x2, dx2, w3, b3, SKIP3, PRECISION)[:3]
        at = slot[:, None] * N3 + col[None, :]
        keep = live[:, None] & col_ok[None, :]
""", """        a2, u2, d2, x2, dx2 = _dense_jet(x1, dx1, w2, b2, SKIP2, PRECISION)
        at = slot[:, None] * N3 + col[None, :]
        keep = live[:, None] & col_ok[None, :]
        a3 = tl.load(g_ptr + at, mask=keep, other=0.0)
        u3 = tl.load(dg_ptr + at, mask=keep, other=0.0)
        if SKIP3 != 0:
            a3 -= _skip(x2, SKIP3)
            u3 -= _skip(dx2, SKIP3)
        d3 = 1.0 - a3 * a3
"""),
    ("a2, u2, d2, gx2, gdx2, SKIP2", "a2, u2 * d2, d2, gx2, gdx2, SKIP2"),
    ("def _bwd_chunk(rr_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr, w3_ptr, b3_ptr, gg_ptr,",
     "def _bwd_chunk(rr_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr, w3_ptr, g_ptr, dg_ptr, gg_ptr,"),
    ("_bwd_chunk(rr_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr, w3_ptr, b3_ptr, gg_ptr, gdg_ptr, base1,",
     "_bwd_chunk(rr_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr, w3_ptr, g_ptr, dg_ptr, gg_ptr, gdg_ptr, base1,"),
    ("w3_ptr, b3_ptr,\n                          gg_ptr,",
     "w3_ptr, b3_ptr,\n                          g_ptr, dg_ptr, gg_ptr,"),
    ("ctx.save_for_backward(rr, nlist, net_index, starts, *params)",
     "ctx.save_for_backward(rr, nlist, net_index, starts, g, dg, *params)"),
    ("rr, nlist, net_index, starts, *params = ctx.saved_tensors",
     "rr, nlist, net_index, starts, g, dg, *params = ctx.saved_tensors"),
    ("(rr, nlist, net_index, starts, *params, g_bar.contiguous()",
     "(rr, nlist, net_index, starts, *params, g, dg, g_bar.contiguous()"),
]
WEIGHT_GRADS_IN = {  # run 120: the weight-gradient GEMMs (k = the chunk's 16 rows) in another precision
    precision: [("        gw = tl.dot(tl.trans(x), gz, input_precision=PRECISION)\n"
                 "        gw += tl.dot(tl.trans(dx), gu, input_precision=PRECISION)\n",
                 f"        gw = tl.dot(tl.trans(x), gz, input_precision=\"{precision}\")\n"
                 f"        gw += tl.dot(tl.trans(dx), gu, input_precision=\"{precision}\")\n")]
    for precision in ("ieee", "tf32")}
VARIANTS = {"current": [], "store-only": STORE_ONLY, "no-weight-grads": NO_WEIGHT_GRADS, "stored-G": STORED_G,
            "stored-G+no-weight-grads": STORED_G + NO_WEIGHT_GRADS,
            "weight-grads-ieee": WEIGHT_GRADS_IN["ieee"], "weight-grads-tf32": WEIGHT_GRADS_IN["tf32"]}


def load_variant(name: str, patches: list, folder: Path):
    text = SOURCE
    for old, new in patches:
        assert old in text, (name, old[:60])
        text = text.replace(old, new)
    path = folder / f"embedding_{name.replace('-', '_').replace('+', '_')}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--precision", default="float32")
    parser.add_argument("--cases", nargs="+", default=["water", "copper"])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--gemm", nargs="+", default=None, help="the kernels' float32 precisions to time")
    args = parser.parse_args()
    dtype = getattr(torch, args.precision)
    folder = Path(tempfile.mkdtemp(dir=os.environ.get("TMPDIR")))
    modules = {name: load_variant(name, VARIANTS[name], folder) for name in args.variants}
    for case in args.cases:
        d, rr, ct = bench.setup(case, dtype)
        rr = rr.abs() / 4  # s in DeePMD's range, so tanh does not saturate everywhere
        us = bench.time_graph(bench.step_fn(d, rr, ct, bench.analytic.embed_all))
        print(json.dumps({"case": case, "precision": args.precision, "variant": "pytorch", "us_fwd_bwd": round(us, 1)}))
        precisions = (args.gemm or ["tf32x3", "tf32"]) if dtype == torch.float32 else ["ieee"]
        for name, module in modules.items():
            for precision in precisions:
                def embed(d, rr, ct, module=module, precision=precision):
                    return module.embed_all(d, rr, ct, precision=precision)
                row = {"case": case, "precision": args.precision, "variant": name, "gemm": precision}
                try:
                    row["us_fwd_bwd"] = round(bench.time_graph(bench.step_fn(d, rr, ct, embed)), 1)
                except Exception as error:  # report and go on
                    row["error"] = f"{type(error).__name__}: {str(error)[:300]}"
                print(json.dumps(row), flush=True)
        # the forward alone, to separate it from the backward
        for precision in precisions if "current" in modules else []:
            def fwd(module=modules["current"], precision=precision, d=d, rr=rr, ct=ct):
                with torch.no_grad():
                    module.embed_all(d, rr, ct, precision=precision)
            print(json.dumps({"case": case, "precision": args.precision, "variant": "current forward only",
                              "gemm": precision, "us": round(bench.time_graph(fwd), 1)}), flush=True)


if __name__ == "__main__":
    main()
