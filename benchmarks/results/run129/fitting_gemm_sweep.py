"""Run 129: the fused float32 fitting products (deeppot/kernels/fitting_gemm.py) against cuBLAS + the elementwise
kernels (fitting.Products), per layer shape of the water fitting net [240, 240, 240] on a 1600-wide descriptor,
for several tiles and row counts; and the error of each against float64. One JSON line per measurement."""
import json
import sys

import torch
from triton.testing import do_bench

from deeppot.kernels import fitting, fitting_gemm
from deeppot.model.fitting import EnergyFitting

dev = torch.device("cuda")
TILES = [dict(BM=128, BN=128, BK=32, num_warps=8, num_stages=3), dict(BM=128, BN=64, BK=32, num_warps=4, num_stages=4),
         dict(BM=64, BN=128, BK=32, num_warps=4, num_stages=3), dict(BM=128, BN=256, BK=32, num_warps=8, num_stages=3),
         dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=3), dict(BM=64, BN=256, BK=32, num_warps=8, num_stages=3),
         dict(BM=128, BN=256, BK=16, num_warps=8, num_stages=4), dict(BM=256, BN=128, BK=32, num_warps=8, num_stages=3)]


def cases(rows, dtype=torch.float32):
    fit = EnergyFitting(1, 1600, [240, 240, 240], resnet_dt=True, dtype=dtype, seed=1).to(dev)
    hidden, _, _ = fitting._unpack(*fitting._flat_params(fit.nets, 0))
    g = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(1, rows, 1600, device=dev, generator=g, dtype=dtype) * 0.1
    h = torch.tanh(torch.randn(1, rows, 240, device=dev, generator=g, dtype=dtype))
    gz = torch.randn(1, rows, 240, device=dev, generator=g, dtype=dtype) * 0.1
    (w1, b1, i1), (w2, b2, i2) = hidden[0], hidden[1]
    return {  # name: (fused, reference) callables
        "layer1 1600->240": (lambda p: p.layer(x, w1, b1, i1, fitting.NONE), (x, w1)),
        "layer2 240->240": (lambda p: p.layer(h, w2, b2, i2, fitting.SAME), (h, w2)),
        "grad 240<-240": (lambda p: p.grad(gz, w2, h, fitting.SAME, h, i1), (gz, w2)),
        "product_t 240->1600": (lambda p: p.product_t(gz, w1), (gz, w1)),
    }


def rel_err(got, want):
    return max((a - b).abs().max().item() / max(b.abs().max().item(), 1e-30) for a, b in zip(got, want, strict=True))


def as_tuple(r):
    return r if isinstance(r, tuple) else (r,)


def sweep(rows_list, tiles_for, out=sys.stdout, dtype=torch.float32):
    """Each case at each row count: cuBLAS + kernel, then the fused products with each of tiles_for(case name)."""
    for rows in rows_list:
        for name, (fn, _) in cases(rows, dtype).items():
            ref = fitting.Products(split=False)
            want = as_tuple(fn(ref))
            row = dict(rows=rows, op=name, dtype=str(dtype)[6:])
            row["cublas_ms"] = do_bench(lambda: fn(ref), warmup=10, rep=100)  # noqa: B023
            for t in tiles_for(name):
                for epilogue in fitting_gemm.TILES:  # run 129's kernel had one tile for every epilogue
                    fitting_gemm.TILES[epilogue] = t
                try:
                    got = as_tuple(fn(fitting_gemm.FusedProducts()))
                    err = rel_err(got, want)
                    ms = do_bench(lambda: fn(fitting_gemm.FusedProducts()), warmup=10, rep=100)  # noqa: B023
                    row[str(tuple(t.values()))] = [round(ms, 4), float(f"{err:.2e}")]
                except Exception as exc:  # a tile that does not compile: say so, go on
                    row[str(tuple(t.values()))] = repr(exc)[:120]
            out.write(json.dumps(row) + "\n")
            out.flush()


if __name__ == "__main__":
    sweep((2048, 8192, 32768, 65536), lambda name: TILES)
