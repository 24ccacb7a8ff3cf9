"""Run 172: the fitting nets' float32 products (f16x3) at water's 98,304-atom shapes, timed one by one.

    python gemm_variants.py TAG [--sweep] [--probe]

Times this tree's `fitting_gemm` products (whatever PYTHONPATH imports: the new tree or .old): the 1600-wide
first layer, the 240-wide layers, the transposed grad product and dE/dD (gz W^T), on O's 32,768 and H's 65,536
rows. --sweep: the same for other tiles (new tree only); --probe: split_probe.py's three ways of splitting."""
import json
import sys
from functools import partial
from pathlib import Path

import torch

from deeppot.kernels import fitting_gemm as fg

DEV = torch.device("cuda")


def timed(fn, reps=30) -> float:
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def cases(rows):
    g = torch.Generator(device=DEV).manual_seed(rows)

    def r(*shape, scale=1.0):
        return torch.randn(*shape, device=DEV, generator=g) * scale

    d, w0, b0 = r(1, rows, 1600, scale=0.3), r(1, 1600, 240, scale=0.03), r(1, 240)
    h, w1, b1, a = torch.tanh(r(1, rows, 240)), r(1, 240, 240, scale=0.06), r(1, 240), torch.tanh(r(1, rows, 240))
    gz = r(1, rows, 240, scale=0.1)
    return {
        "layer 1600->240": partial(fg.layer_forward, d, w0, b0, None, 0, "f16x3"),
        "layer 240->240 skip": partial(fg.layer_forward, h, w1, b1, None, 1, "f16x3"),
        "grad 240<-240 skip": partial(fg.layer_grad, gz, w1, h, 1, a, None, "f16x3"),
        "dE/dD 1600<-240": partial(fg.product_t, gz, w0, "f16x3"),
    }


def main():
    tag, out = sys.argv[1], []
    sweep = {"128,128,64,8,3": (128, 128, 64, 8, 3), "128,128,32,8,4": (128, 128, 32, 8, 4),
             "64,128,64,4,4": (64, 128, 64, 4, 4), "128,64,64,4,4": (128, 64, 64, 4, 4),
             "128,128,64,8,4": (128, 128, 64, 8, 4), "64,256,32,4,3": (64, 256, 32, 4, 3)}
    tiles = sweep if "--sweep" in sys.argv else {"kept": None}
    for rows in (32768, 65536):
        for tname, tile in tiles.items():
            if tile is not None:
                bm, bn, bk, w, s = tile
                for ep in (fg.LAYER, fg.GRAD, fg.NONE_EPILOGUE):
                    fg.F16X3_TILES[ep] = dict(BM=bm, BN=bn, BK=bk, num_warps=w, num_stages=s)
            for name, fn in cases(rows).items():
                try:
                    ms = timed(fn)
                except Exception as e:  # a tile that does not fit the shared memory
                    ms = f"{type(e).__name__}"
                out.append(dict(tree=tag, rows=rows, tile=tname, product=name, ms=ms))
                print(json.dumps(out[-1]), flush=True)
    if "--probe" in sys.argv:
        sys.path.insert(0, str(Path(__file__).parent))
        from split_probe import _split_gemm
        for rows in (32768, 65536):
            x, w, b = torch.randn(rows, 1600, device=DEV) * 0.3, torch.randn(1600, 240, device=DEV) * 0.03, \
                torch.randn(240, device=DEV)
            (xh, xl), (wh, wl) = parts(x), parts(w)
            y = torch.empty(rows, 240, device=DEV)
            want = torch.tanh(x.double() @ w.double() + b.double())
            for mode in (0, 1, 2):
                xa, xb = (xh, xl) if mode == 2 else (x, x)
                wa, wb = (w, w) if mode == 0 else (wh, wl)
                for bm, bn, bk, nw, ns in ((128, 128, 64, 8, 3), (128, 128, 32, 8, 4)):
                    grid = (triton_cdiv(rows, bm), triton_cdiv(240, bn))
                    fn = partial(_split_gemm[grid], xa, xb, wa, wb, y, b, rows, 240, 1600, 240, 1, K=1600, BM=bm,
                                 BN=bn, BK=bk, MODE=mode, num_warps=nw, num_stages=ns)
                    ms = timed(fn)
                    err = (y.double() - want).abs().max().item()
                    out.append(dict(tree=tag, rows=rows, probe=mode, tile=f"{bm},{bn},{bk},{nw},{ns}", ms=ms,
                                    max_err=err))
                    print(json.dumps(out[-1]), flush=True)


def parts(t):
    return t.half(), ((t - t.half().float()) * 2048).half()


def triton_cdiv(a, b):
    return (a + b - 1) // b


if __name__ == "__main__":
    main()
