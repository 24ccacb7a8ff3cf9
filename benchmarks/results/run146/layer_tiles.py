"""Run 146: the fitting products with their epilogues (`fitting_gemm.layer_forward`, `layer_grad`, `product_t`) in
f16x3 on each kept tile candidate, water's shapes at 65,536 rows (two nets on one shared x for the first layer).
One JSON line each: ms (do_bench) and the deviation from the tf32x3 products on the tiles kept before."""

from __future__ import annotations

import json

import torch
from triton.testing import do_bench

from deeppot.kernels import fitting_gemm as fg

CANDIDATES = {"128x64x32/4": dict(BM=128, BN=64, BK=32, num_warps=4, num_stages=4),
              "128x128x64/8": dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=3),
              "128x128x32/8": dict(BM=128, BN=128, BK=32, num_warps=8, num_stages=4),
              "64x128x32/4": dict(BM=64, BN=128, BK=32, num_warps=4, num_stages=4)}


def cases(dev):
    g = torch.Generator(device=dev).manual_seed(0)
    rows = 65536
    d = torch.randn(1, rows, 1600, device=dev, generator=g) * 0.3
    w1 = torch.randn(2, 1600, 240, device=dev, generator=g) / 40
    w2 = torch.randn(2, 240, 240, device=dev, generator=g) / 15
    b = torch.randn(2, 1, 240, device=dev, generator=g)
    idt = torch.rand(2, 1, 240, device=dev, generator=g)
    h = torch.tanh(torch.randn(2, rows, 240, device=dev, generator=g))
    gz = torch.randn(2, rows, 240, device=dev, generator=g) * 1e-2
    return {"layer 1600 -> 240": (fg.LAYER, lambda p: fg.layer_forward(d, w1, b, None, 0, p)),
            "layer 240 -> 240 (skip, idt)": (fg.LAYER, lambda p: fg.layer_forward(h, w2, b, idt, 1, p)),
            "grad 240 <- 240 (skip, idt)": (fg.GRAD, lambda p: fg.layer_grad(gz, w2, gz, 1, h, idt, p)),
            "dE/dD 1600 <- 240": (fg.NONE_EPILOGUE, lambda p: (fg.product_t(gz, w1, p),))}


def main() -> None:
    for name, (epilogue, call) in cases(torch.device("cuda")).items():
        ref = call("tf32x3")
        for label, tile in CANDIDATES.items():
            fg.F16X3_TILES[epilogue] = tile
            out = call("f16x3")
            dev = max(float((o - r).abs().max() / r.abs().max()) for o, r in zip(out, ref, strict=True))
            ms = do_bench(lambda: call("f16x3"), warmup=25, rep=200)  # noqa: B023
            print(json.dumps({"product": name, "tile": label, "ms": round(ms, 4), "dev_from_tf32x3": dev}),
                  flush=True)
        print(json.dumps({"product": name, "tile": "tf32x3 kept", "ms": round(do_bench(lambda: call("tf32x3"),  # noqa: B023
                                                                                        warmup=25, rep=200), 4)}),
              flush=True)


if __name__ == "__main__":
    main()
