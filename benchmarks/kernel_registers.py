"""Registers and spills of the fused training embedding kernels on an H100 (sm_90), without a GPU.

Triton compiles a kernel for a given target on any machine; its bundled `ptxas -v` then reports what the GPU would
run: registers per thread and bytes spilled to local memory. Spills slow these kernels down (run 54-56's tile
experiments), so a change to them can be checked here before it costs device time.

    python benchmarks/kernel_registers.py [--neuron 25 50 100] [--sel 61 58 72]
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
        elif name in ("net_ptr", "starts_ptr"):
            types[name] = "*i32"
        elif name == "nlist_ptr":
            types[name] = "*i64"
        else:
            types[name] = pointer if name.endswith("_ptr") else "i32"
    return types


def ptxas_report(kernel, neuron: list[int], sel: list[int], precision: str, skip: bool,
                 block: int = embedding.BLOCK_J, warps: int = embedding.NUM_WARPS) -> str:
    n1, n2, n3 = neuron
    shapes = [(1, n1), (1, n1), (n1, n2), (1, n2), (n2, n3), (1, n3)]
    params = [torch.zeros(1, *s) for s in shapes]
    meta = dict(embedding.net_meta(params, sel, "ieee" if precision == "float64" else "tf32x3"),
                BLOCK=block, SKIP_PADDING=skip)
    pointer = "*fp64" if precision == "float64" else "*fp32"
    source = ASTSource(kernel, signature(kernel, meta, pointer), constexprs=meta)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--neuron", type=int, nargs=3, default=[25, 50, 100])
    parser.add_argument("--sel", type=int, nargs="+", default=[61, 58, 72], help="the list's slots per block")
    parser.add_argument("--tile", nargs="+", default=[f"{embedding.BLOCK_J}x{embedding.NUM_WARPS}"],
                        help="BLOCKxWARPS of the kernels, e.g. 16x8 16x4")
    parser.add_argument("--precisions", nargs="+", default=["float32", "float64"])
    args = parser.parse_args()
    for tile in args.tile:
        block, warps = map(int, tile.split("x"))
        for kernel in (embedding._embed_fwd_kernel, embedding._embed_bwd_kernel):
            for precision in args.precisions:
                for skip in (False, True):
                    report = ptxas_report(kernel, args.neuron, args.sel, precision, skip, block, warps)
                    print(f"{tile} {kernel.fn.__name__} {precision} skip_padding={skip}: {report}")


if __name__ == "__main__":
    main()
