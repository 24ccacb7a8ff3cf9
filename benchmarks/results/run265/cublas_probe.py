"""Run 265: the fitting nets' 1600-wide f16x3 products on cuBLAS's float16 GEMMs with float32 output
(`torch.mm(..., out_dtype=torch.float32)`, float32 accumulation) against the tree's persistent Triton kernel, alone, at
water's shapes (65,536 rows: the H atoms; 32,768: the O atoms). x = hi + lo / 2048 as `precision._split`; the three
products of f16x3 as
  layer 1 (x D: rows x 1600 -> 240):  C = [hi | lo] @ [W_lo; W_hi] (k 3200), y = hi @ W_hi + C / 2048 (addmm, beta);
  dE/dD (gz W1^T: rows x 240 -> 1600): one GEMM, [2048 hi | hi | lo] @ [W_hi; W_lo; W_hi] (k 720), alpha 1 / 2048
(2048 hi is exact in float16 while |hi| < 32; the output written once). [hi | lo] is one buffer, hi a strided view of
it. The tree's rows include its epilogue (bias and tanh for layer 1), the cuBLAS rows only the products; "split_ms"
is what making the operand's parts from float32 costs in PyTorch (a kernel epilogue would write them instead).
Each row: ms (median of 30 CUDA-event timings), TFLOP/s counting one float32 product, the largest deviation from a
float64 product relative to its largest value (the tree's and cuBLAS's).
Usage (GPU): python cublas_probe.py
"""
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run259"))
from gemm_probe import ms, tree_launch

from deeppot.kernels import fitting_gemm as fg
from deeppot.kernels.precision import _split


def parts(x, scale_hi=False):
    hi, lo = _split(x)
    return torch.cat([hi * 2048.0, hi, lo] if scale_hi else [hi, lo], dim=1)


def layer1(xp, k, w_cat, w_hi):
    def run():
        c = torch.mm(xp, w_cat, out_dtype=torch.float32)
        return torch.addmm(c, xp[:, :k], w_hi, beta=1.0 / 2048.0, out_dtype=torch.float32)
    return run


def de_dd(gp, w_cat):
    zero = torch.zeros(1, device="cuda")

    def run():
        return torch.addmm(zero, gp, w_cat, beta=0.0, alpha=1.0 / 2048.0, out_dtype=torch.float32)
    return run


def row(shape, rows, variant, fn, ref, flops, **extra):
    t = ms(fn)
    err = float((fn().double() - ref).abs().max() / ref.abs().max())
    print(json.dumps({"shape": shape, "rows": rows, "variant": variant, "ms": round(t, 4),
                      "tflops": round(flops / t / 1e9, 1), "d_rel_f64": err, **extra}), flush=True)


def main():
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    g = torch.Generator(device="cuda").manual_seed(0)
    base = dict(fg.PERSISTENT_TILE)
    for rows in (65536, 32768):
        x = torch.randn(rows, 1600, device="cuda", generator=g) * 0.3
        w = torch.randn(1600, 240, device="cuda", generator=g) / 40.0
        b = torch.zeros(240, device="cuda")
        ref = x.double() @ w.double()
        flops = 2 * rows * 1600 * 240
        tree = tree_launch(x, w, False, fg.LAYER, b, base, 2)  # (a, h') with tanh: compare its h' to tanh(ref)
        t = ms(tree)
        err = float((tree().double() - torch.tanh(ref)).abs().max())
        print(json.dumps({"shape": "layer1", "rows": rows, "variant": "tree", "ms": round(t, 4),
                          "tflops": round(flops / t / 1e9, 1), "d_abs_tanh_f64": err}), flush=True)
        w_hi, w_lo = _split(w)
        xp = parts(x)
        row("layer1", rows, "cublas", layer1(xp, 1600, torch.cat([w_lo, w_hi]), w_hi), ref, flops,
            split_ms=round(ms(lambda x=x: parts(x)), 4))
        fwd = layer1(xp, 1600, torch.cat([w_lo, w_hi]), w_hi)
        row("layer1", rows, "cublas_tanh", lambda fwd=fwd, b=b: torch.tanh(fwd() + b), torch.tanh(ref), flops)
        gz = torch.randn(rows, 240, device="cuda", generator=g) * 0.1
        w1 = torch.randn(1600, 240, device="cuda", generator=g) / 40.0
        ref = gz.double() @ w1.double().T
        row("dE/dD", rows, "tree", tree_launch(gz, w1, True, fg.NONE_EPILOGUE, None, base, 2), ref, flops)
        t_hi, t_lo = _split(w1.T.contiguous())
        gp = parts(gz, scale_hi=True)
        row("dE/dD", rows, "cublas", de_dd(gp, torch.cat([t_hi, t_lo, t_hi])), ref, flops,
            split_ms=round(ms(lambda gz=gz: parts(gz, scale_hi=True)), 4))


if __name__ == "__main__":
    main()
