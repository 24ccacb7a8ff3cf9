"""Registers and spills of the fused training embedding kernels on an H100 (sm_90), without a GPU.

Triton compiles a kernel for a given target on any machine; its bundled `ptxas -v` then reports what the GPU would
run: registers per thread and bytes spilled to local memory. Spills slow these kernels down (run 54-56's tile
experiments), so a change to them can be checked here before it costs device time.

    python benchmarks/kernel_registers.py [--neuron 25 50 100] [--sel 61 58 72]
    python benchmarks/kernel_registers.py --atom-tiles 4,16,4 1,16,1 --sel 46 92   # the inference tile kernels
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from deeppot.kernels import embedding

TARGET = GPUTarget("cuda", 90, 32)


def signature(kernel, meta: dict, pointer: str) -> dict[str, str]:
    """Triton's type of every argument: float pointers of the model's precision, int32 tables, the int64 list."""
    types = {}
    for name in kernel.arg_names:
        if name in meta:
            types[name] = "constexpr"
        elif name in ("net_ptr", "starts_ptr", "order_ptr"):
            types[name] = "*i32"
        elif name == "nlist_ptr":
            types[name] = "*i64"
        else:
            types[name] = pointer if name.endswith("_ptr") else "i32"
    return types


def training_source(kernel, neuron: list[int], sel: list[int], precision: str, skip: bool,
                    block: int = embedding.BLOCK_J, products: str = "tf32x3") -> ASTSource:
    """A training embedding kernel (`embedding._embed_fwd_kernel` or `_embed_bwd_kernel`) as `embed_all` would
    launch it, its float32 products in `products` ("tf32x3", "f16x3" or "tf32")."""
    n1, n2, n3 = neuron
    shapes = [(1, n1), (1, n1), (n1, n2), (1, n2), (n2, n3), (1, n3)]
    params = [torch.zeros(1, *s) for s in shapes]
    meta = dict(embedding.net_meta(params, sel, "ieee" if precision == "float64" else products),
                BLOCK=block, SKIP_PADDING=skip)
    pointer = "*fp64" if precision == "float64" else "*fp32"
    return ASTSource(kernel, signature(kernel, meta, pointer), constexprs=meta)


def ptxas_report(kernel, neuron: list[int], sel: list[int], precision: str, skip: bool,
                 block: int = embedding.BLOCK_J, warps: int = embedding.NUM_WARPS, products: str = "tf32x3") -> str:
    return compiled_report(training_source(kernel, neuron, sel, precision, skip, block, products), warps)


def compiled_report(source: ASTSource, warps: int) -> str:
    compiled = triton.compile(source, target=TARGET, options={"num_warps": warps})
    ptxas = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as ptx:
        ptx.write(compiled.asm["ptx"])
        ptx.flush()
        out = subprocess.run([ptxas, "-v", "--gpu-name=sm_90a", ptx.name, "-o", os.devnull],
                             capture_output=True, text=True, check=True).stderr
    registers = re.search(r"Used (\d+) registers", out).group(1)
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", out).groups()
    return f"{registers} registers, spills {spills[0]} B stored / {spills[1]} B loaded"


TYPES = {torch.float32: "*fp32", torch.float64: "*fp64", torch.float16: "*fp16", torch.int32: "*i32",
         torch.int64: "*i64"}


def argument_type(a) -> str:
    """Triton's type of a launch argument: a tensor's pointer, a TMA descriptor's block (`atom_tiles.HOLD_WEIGHTS`)
    or an int32."""
    if isinstance(a, torch.Tensor):
        return TYPES[a.dtype]
    if hasattr(a, "block_shape"):
        return f"tensordesc<{TYPES[a.base.dtype][1:]}{list(a.block_shape)}>"
    return "i32"


def atom_tile_source(kernel: str, precision: str, tile: tuple[int, int, int], neuron: list[int], sel: list[int],
                     products: str = "tf32x3", rows: bool = False, aligned: bool = False) -> tuple[ASTSource, int]:
    """The inference atom-tile kernel ("t" or "grad", `deeppot.kernels.atom_tiles`) of a water-like se_e2_a model at
    a given (ATOMS, SLOTS, warps), its float32 products in `products` ("tf32x3" or "f16x3"), as `_tiled_args` would
    launch it, and its warps; with `rows`, reading the slots' rows made beforehand (`atom_tiles.shared_rows`); with
    `aligned`, its pointers 16-byte aligned as the launcher sees real tensors (vector loads)."""
    from deeppot.kernels import atom_tiles
    from deeppot.model import EnergyModel

    dtype = getattr(torch, precision)
    model = EnergyModel.from_config({"type_map": [str(t) for t in range(len(sel))], "descriptor": {
        "type": "se_e2_a", "sel": sel, "rcut": 6.0, "rcut_smth": 0.5, "neuron": neuron, "axis_neuron": 16,
        "precision": precision}, "fitting_net": {"neuron": [240, 240, 240], "precision": precision}})
    n, nnei = 64, sum(sel)
    rij, center_type = torch.zeros(n, nnei, 3, dtype=dtype), torch.zeros(n, dtype=torch.int64)
    tiles = atom_tiles.F16X3_TILES if products == "f16x3" and dtype == torch.float32 else atom_tiles.TILES[dtype]
    saved = tiles[kernel]
    tiles[kernel] = tile
    try:
        tensors, meta, _ = atom_tiles._tiled_args(model.descriptor, rij, center_type, products, kernel, None,
                                                  rij.new_empty(1) if rows else None)
    finally:
        tiles[kernel] = saved
    warps = meta.pop("num_warps")
    outputs = [rij.new_empty(n, 4, meta["N3"])] if kernel == "t" else [rij.new_empty(n, 4, meta["N3"]), rij]
    args = [*tensors, *outputs, n, nnei, 1, *_epilogue(model, kernel, outputs[0], meta).values()]
    fn = atom_tiles._tiled_t_kernel if kernel == "t" else atom_tiles._tiled_grad_kernel
    names = [a for a in fn.arg_names if a not in meta]
    sig = {name: argument_type(a) for name, a in zip(names, args, strict=True)}
    sig.update({name: "constexpr" for name in meta})
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(fn.arg_names) if sig[name].startswith("*")}
    return ASTSource(fn, sig, constexprs=meta, attrs=attrs if aligned else None), warps


def _epilogue(model, kernel: str, t_mat: torch.Tensor, meta: dict) -> dict:
    """The atom-tile kernels' arguments after nstat as the Evaluator's stage launches them (constants into meta):
    the T kernel adds the tail and writes D at each type's positions; the gradient kernel has none."""
    from deeppot.kernels import atom_tiles
    from deeppot.kernels.reach import full_reach

    if kernel != "t":
        return {}
    d, n = model.descriptor, t_mat.shape[0]
    desc = t_mat.new_empty(n, d.dim_out, dtype=model.fitting.dtype)
    pos = torch.zeros(n, dtype=torch.int64)
    return atom_tiles.epilogue_args(d, t_mat, full_reach(d, n, t_mat.device), (desc, pos), meta, meta["N3"])


def atom_tile_report(kernel: str, precision: str, tile: tuple[int, int, int], neuron: list[int], sel: list[int],
                     products: str = "tf32x3", rows: bool = False) -> str:
    """Registers and spills of `atom_tile_source`'s kernel."""
    return compiled_report(*atom_tile_source(kernel, precision, tile, neuron, sel, products, rows))


def persistent_source(k: int = 1600) -> tuple[ASTSource, dict]:
    """The inference fitting products' persistent f16x3 kernel (`fitting_gemm._persistent_kernel`) as a first layer
    of input width k would launch it, and its launch options (`PERSISTENT_TILE`)."""
    from deeppot.kernels import fitting_gemm as fg

    tile = fg.PERSISTENT_TILE
    meta = dict(K=k, EPILOGUE=fg.LAYER, SKIP=0, HAS_IDT=False, WRITE_OUT=False)
    x, weight = (f"tensordesc<fp32[{tile['BM']}, {tile['BK']}]>", f"tensordesc<fp16[{tile['BK']}, {tile['BN']}]>")
    types = dict(signature(fg._persistent_kernel, meta, "*fp32"), x_desc=x, wh_desc=weight, wl_desc=weight)
    return ASTSource(fg._persistent_kernel, types, constexprs=meta), dict(num_warps=tile["num_warps"],
                                                                         num_stages=tile["num_stages"])


def stack_source(tile: dict | None = None, dp: int = 256) -> tuple[ASTSource, dict]:
    """The inference fitting nets' hidden-stack kernel (`fitting_stack._stack_kernel`, persistent) for a net of
    width <= dp at `tile` (default `STACK_TILE`), on 16-byte aligned tensors and sizes as water's (without the
    alignment every load is scalar and the spills mislead, run 260), and its launch options."""
    from deeppot.kernels import fitting_stack as fs

    tile = tile or fs.STACK_TILE
    meta = dict(DP=dp, BM=tile["BM"], BN=tile["BN"], BK=tile["BK"], STAGES=tile["stages"], PERSISTENT=True)
    types = {"w_ptr": "*fp16", "rows": "i32", "D": "i32", "programs": "i32"}
    fn = fs._stack_kernel
    sig = {name: "constexpr" if name in meta else types.get(name, "*fp32") for name in fn.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(fn.arg_names)
             if sig[name].startswith("*") or name in ("rows", "D")}
    return ASTSource(fn, sig, constexprs=meta, attrs=attrs), dict(num_warps=tile["warps"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--atom-tiles", nargs="+", metavar="ATOMS,SLOTS,WARPS",
                        help="instead: the inference atom-tile kernels at these tiles, e.g. 4,16,4 1,16,1")
    parser.add_argument("--neuron", type=int, nargs=3, default=[25, 50, 100])
    parser.add_argument("--sel", type=int, nargs="+", default=[61, 58, 72], help="the list's slots per block")
    parser.add_argument("--tile", nargs="+", default=[f"{embedding.BLOCK_J}x{embedding.NUM_WARPS}"],
                        help="BLOCKxWARPS of the kernels, e.g. 16x8 16x4")
    parser.add_argument("--precisions", nargs="+", default=["float32", "float64"])
    parser.add_argument("--products", default="tf32x3", choices=["tf32x3", "f16x3"],
                        help="the kernels' float32 products (deeppot/kernels/precision.py)")
    parser.add_argument("--rows", action="store_true", help="the atom-tile kernels reading precomputed rows")
    args = parser.parse_args()
    for tile in args.atom_tiles or ():
        for kernel in ("t", "grad"):
            for precision in args.precisions:
                report = atom_tile_report(kernel, precision, tuple(map(int, tile.split(","))), args.neuron, args.sel,
                                          args.products, args.rows)
                print(f"atom tile {tile} {kernel} {precision}: {report}", flush=True)
    for tile in args.tile if not args.atom_tiles else ():
        block, warps = map(int, tile.split("x"))
        for kernel in (embedding._embed_fwd_kernel, embedding._embed_bwd_kernel):
            for precision in args.precisions:
                for skip in (False, True):
                    report = ptxas_report(kernel, args.neuron, args.sel, precision, skip, block, warps,
                                          args.products)
                    print(f"{tile} {kernel.fn.__name__} {precision} skip_padding={skip}: {report}")


if __name__ == "__main__":
    main()
