"""Run 259: the fitting nets' f16x3 products at water's shapes, alone (65,536 rows: water's H atoms), the tree's
persistent TMA kernel (`fitting_gemm._persistent_kernel`) against variants written here:

- "xparts": x's float16 parts made beforehand (as W's are) and read by TMA, no split in the kernel's k loop;
- "tma_store": the no-epilogue product (dE/dD) stored by TMA from shared memory instead of from registers (call 2);
- tiles: the tree's kernel on other (BM, BN, BK, warps, stages) and waves (call 2); x's parts on a few (call 3).

Each row: ms (median of CUDA-event timings), TFLOP/s counting one float32 product (2 rows k m), the largest
deviation from the tree's kernel relative to its largest value. The tree's rows also time its launch path inside the
events (W's parts looked up, TMA descriptors made, ~25 arguments), the likeliest reason why they sat ~0.07 ms above
the probe's copy of the same kernel for the LAYER products in call 2 (not for dE/dD); the probe launches on
descriptors made once. Compare probe rows with probe rows.
Usage (GPU): python gemm_probe.py [--rows 65536] [--set call2|call3] (call 3 never ran: no machine could be started).
"""
import argparse
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from deeppot.kernels import fitting_gemm as fg
from deeppot.kernels.embedding import _f16_parts
from deeppot.kernels.precision import _split, weight_parts


@triton.jit
def _tile_parts(xh_desc, xl_desc, wh_desc, wl_desc, r0, c0, K: tl.constexpr, X_PARTS: tl.constexpr):
    BM: tl.constexpr = xh_desc.block_shape[0]
    BK: tl.constexpr = xh_desc.block_shape[1]
    BN: tl.constexpr = wh_desc.block_shape[1]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    lo = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        if X_PARTS:
            x_hi = xh_desc.load([r0, k0])
            x_lo = xl_desc.load([r0, k0])
        else:
            x_hi, x_lo = _f16_parts(xh_desc.load([r0, k0]))
        w_hi = wh_desc.load([k0, c0])
        w_lo = wl_desc.load([k0, c0])
        acc = tl.dot(x_hi, w_hi, acc)
        lo = tl.dot(x_lo, w_hi, tl.dot(x_hi, w_lo, lo))
    return acc + lo * (1.0 / 2048.0)


@triton.jit
def _probe_kernel(xh_desc, xl_desc, wh_desc, wl_desc, y_desc, y_ptr, b_ptr, rows, m, programs, K: tl.constexpr,
                  EPILOGUE: tl.constexpr, X_PARTS: tl.constexpr, TMA_STORE: tl.constexpr):
    BM: tl.constexpr = xh_desc.block_shape[0]
    BN: tl.constexpr = wh_desc.block_shape[1]
    cols = tl.cdiv(m, BN)
    tiles = tl.cdiv(rows, BM) * cols
    for tile in tl.range(tl.program_id(0), tiles, programs, flatten=True):
        r0, c0 = (tile // cols) * BM, (tile % cols) * BN
        acc = _tile_parts(xh_desc, xl_desc, wh_desc, wl_desc, r0, c0, K, X_PARTS)
        row = (r0 + tl.arange(0, BM)).to(tl.int64)[:, None]
        col = c0 + tl.arange(0, BN)[None, :]
        if TMA_STORE:
            y_desc.store([r0, c0], acc)
        else:
            fg._epilogue(acc, row, col, 0, rows, m, y_ptr, y_ptr, b_ptr, b_ptr, y_ptr, y_ptr, 0, 0, 1,
                         EPILOGUE, 0, False, False)


def probe_launch(x, w, transposed, epilogue, b, x_parts, tma_store, tile, waves):
    rows, k = x.shape
    w_hi, w_lo = weight_parts(w[None], transposed)
    m = w_hi.shape[2]
    y = x.new_empty(rows, m)
    bm, bn, bk = tile["BM"], tile["BN"], tile["BK"]
    if x_parts:
        xh, xl = _split(x)
        xd = (TensorDescriptor.from_tensor(xh, [bm, bk]), TensorDescriptor.from_tensor(xl, [bm, bk]))
    else:
        xd = (TensorDescriptor.from_tensor(x, [bm, bk]),) * 2
    wd = tuple(TensorDescriptor.from_tensor(p.reshape(-1, m), [bk, bn]) for p in (w_hi, w_lo))
    yd = TensorDescriptor.from_tensor(y, [bm, bn])
    tiles = triton.cdiv(rows, bm) * triton.cdiv(m, bn)
    programs = min(tiles, waves * torch.cuda.get_device_properties(0).multi_processor_count)

    def run():
        _probe_kernel[(programs,)](*xd, *wd, yd, y, b if b is not None else y, rows, m, programs, K=k,
                                   EPILOGUE=epilogue, X_PARTS=x_parts, TMA_STORE=tma_store,
                                   num_warps=tile["num_warps"], num_stages=tile["num_stages"])
        return y
    return run


def tree_launch(x, w, transposed, epilogue, b, tile, waves):
    def run():
        fg.PERSISTENT_TILE, fg.PERSISTENT["waves"] = tile, waves
        if epilogue == fg.LAYER:
            return fg.layer_forward(x[None], w[None], b[None], None, 0, "f16x3")[0][0]
        return fg.product_t(x[None], w[None], "f16x3")[0]
    return run


def ms(fn, n=30):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[n // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=65536)
    ap.add_argument("--set", choices=["call2", "call3"], default="call3", help="which call's variants")
    args = ap.parse_args()
    rows = args.rows
    g = torch.Generator(device="cuda").manual_seed(0)
    base = dict(fg.PERSISTENT_TILE)
    shapes = {"layer1": (1600, 240, False, fg.LAYER), "layer2": (240, 240, False, fg.LAYER),
              "dE/dD": (240, 1600, True, fg.NONE_EPILOGUE)}
    if args.set == "call2":
        tiles = {"base": (base, 2), "waves1": (base, 1), "waves3": (base, 3),
                 "bk32_s4": (dict(base, BK=32, num_stages=4), 2), "bn64_s4": (dict(base, BN=64, num_stages=4), 2),
                 "bm64_bn256_s2": (dict(base, BM=64, BN=256, num_stages=2), 2), "w4": (dict(base, num_warps=4), 2)}
        parts_tiles = {"xparts": base}  # x's parts on the tree's tile: 262,168 B of shared memory, no launch
    else:
        tiles = {"base": (base, 2)}
        parts_tiles = {"xparts_s2": dict(base, num_stages=2), "xparts_bk32_s4": dict(base, BK=32, num_stages=4),
                       "xparts_bk32_s3": dict(base, BK=32, num_stages=3),
                       "xparts_bk32_s5": dict(base, BK=32, num_stages=5),
                       "probe_bk32_s4": dict(base, BK=32, num_stages=4)}
    for name, (k, m, transposed, epilogue) in shapes.items():
        x = torch.randn(rows, k, device="cuda", generator=g) * (0.3 if k > 300 else 1.0)
        w = torch.randn(m, k, device="cuda", generator=g) / k ** 0.5 if transposed else \
            torch.randn(k, m, device="cuda", generator=g) / k ** 0.5
        b = torch.randn(m, device="cuda", generator=g) * 0.1
        ref = tree_launch(x, w, transposed, epilogue, b, base, 2)().clone()
        flops = 2 * rows * k * m
        variants = {f"tree_{t}": tree_launch(x, w, transposed, epilogue, b, *tiles[t]) for t in tiles}
        variants["probe"] = probe_launch(x, w, transposed, epilogue, b, False, False, base, 2)
        for pname, tile in parts_tiles.items():
            variants[pname] = probe_launch(x, w, transposed, epilogue, b, pname.startswith("x"), False, tile, 2)
        if args.set == "call2" and epilogue == fg.NONE_EPILOGUE:
            s2 = dict(base, num_stages=2)  # the stored tile's 64 KB of shared memory beside the loads'
            variants["probe_s2"] = probe_launch(x, w, transposed, epilogue, b, False, False, s2, 2)
            variants["tma_store_s2"] = probe_launch(x, w, transposed, epilogue, b, False, True, s2, 2)
            variants["xparts_tma_store_s2"] = probe_launch(x, w, transposed, epilogue, b, True, True, s2, 2)
        elif args.set == "call3":
            variants["xparts_s2_waves1"] = probe_launch(x, w, transposed, epilogue, b, True, False,
                                                        parts_tiles["xparts_s2"], 1)
        for vname, fn in variants.items():
            try:
                t = ms(fn)
                err = float((fn() - ref).abs().max() / ref.abs().max())
                print(json.dumps({"shape": name, "rows": rows, "variant": vname, "ms": round(t, 4),
                                  "tflops": round(flops / t / 1e9, 1), "d_rel": err}), flush=True)
            except Exception as e:  # a tile that does not fit: say so, go on
                print(json.dumps({"shape": name, "variant": vname, "error": str(e)[:200]}), flush=True)
            finally:
                fg.PERSISTENT_TILE, fg.PERSISTENT["waves"] = base, 2


if __name__ == "__main__":
    main()
