"""Instructions in the loops of the compressed table kernels, or of the atom-tile kernels, on an H100 (sm_90 SASS),
without a GPU.

Triton compiles a kernel for a given target on any machine; its bundled ptxas and nvdisasm then give the machine
code the GPU would run. The table kernels are bound by their instructions (benchmarks/table_roofline.py), so the
size of their loops, counted here, is a first check of a change before it costs device time (runs 156-162: the
float32 T loop 383 -> 264 instructions with the rows computed once). Pointers are compiled as the launcher sees
aligned tensors (16-byte divisibility), without which no load would be vectorised.

    python benchmarks/kernel_sass.py [--precisions float32 float64] [--tiles t=1,2,1 grad=1,4,1]
    python benchmarks/kernel_sass.py --atom-tiles [--precisions float32]   # water's uncompressed kernels

Counts are a first check only: run 236's 21% shorter atom-tile T loop ran 6% faster, run 238's 4% shorter one
slower (benchmarks/results/README.md).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import tempfile

import torch
import triton
from kernel_registers import TARGET, atom_tile_source
from triton.compiler import ASTSource

from deeppot.kernels import atom_tiles, compressed

BIN = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
WATER = dict(M1=100, M1P=128, NTYPES=2, ONE_SIDE=True, MAX_SEL=92)  # se_e2_a water: sel [46, 92], M1 = 100


def signature(fn, meta: dict, precision: str) -> dict[str, str]:
    """Triton's type of every argument of a compressed kernel (by its name)."""
    pointer = "*fp32" if precision == "float32" else "*fp64"
    types = {"type_ptr": "*i32", "starts_ptr": "*i32", "top_ptr": "*i64"}
    return {name: "constexpr" if name in meta else types.get(name, pointer if name.endswith("_ptr") else "i32")
            for name in fn.arg_names}


def disassemble(fn, meta: dict, precision: str, warps: int) -> tuple[str, str]:
    """(ptxas -v's report, the SASS) of compressed kernel fn compiled for sm_90a."""
    sig = signature(fn, meta, precision)
    aligned = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(fn.arg_names) if sig[name].startswith("*")}
    return disassemble_source(ASTSource(fn, sig, constexprs=meta, attrs=aligned), warps)


def disassemble_source(source: ASTSource, warps: int) -> tuple[str, str]:
    """(ptxas -v's report, the SASS) of a kernel source compiled for sm_90a."""
    compiled = triton.compile(source, target=TARGET, options={"num_warps": warps})
    with tempfile.TemporaryDirectory() as tmp:
        ptx, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        with open(ptx, "w") as f:
            f.write(compiled.asm["ptx"])
        report = subprocess.run([os.path.join(BIN, "ptxas"), "-v", "--gpu-name=sm_90a", ptx, "-o", cubin],
                                capture_output=True, text=True, check=True).stderr
        sass = subprocess.run([os.path.join(BIN, "nvdisasm"), "-c", cubin], capture_output=True, text=True,
                              check=True).stdout
    return report, sass


def loops(sass: str) -> list[collections.Counter]:
    """The opcodes of each loop: from a label to a branch back to it."""
    labels, ops = {}, []
    for line in sass.splitlines():
        label = re.match(r"\s*(\.L_x_\d+):", line)
        if label:
            labels[label.group(1)] = len(ops)
        op = re.match(r"\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)(.*)", line)
        if op:
            ops.append((op.group(1), op.group(2)))
    found = []
    for i, (name, rest) in enumerate(ops):
        target = re.search(r"(\.L_x_\d+)", rest) if name == "BRA" else None
        if target and labels.get(target.group(1), i + 1) <= i and i - labels[target.group(1)] > 1:
            found.append(collections.Counter(name for name, _ in ops[labels[target.group(1)]:i + 1]))
    return found


def report_line(kernel: str, precision: str, tile: tuple[int, int, int], atom_tiles: bool = False) -> str:
    """Registers, spills and each loop's size of a compressed kernel, or of an atom-tile kernel (f16x3 in float32,
    reading the rows made beforehand, as `DeepPot` runs water on an H100)."""
    if atom_tiles:
        f16x3 = precision == "float32"
        report, sass = disassemble_source(*atom_tile_source(
            kernel, precision, tile, [25, 50, 100], [46, 92], "f16x3" if f16x3 else "tf32x3", f16x3, aligned=True))
    else:
        fn = compressed._compressed_t_kernel if kernel == "t" else compressed._compressed_grad_kernel
        meta = {k: v for k, v in dict(WATER, ATOMS=tile[0], SLOTS=tile[1]).items() if k in fn.arg_names}
        report, sass = disassemble(fn, meta, precision, tile[2])
    registers = re.search(r"Used (\d+) registers", report).group(1)
    spilled = re.search(r"(\d+) bytes spill stores", report).group(1)
    sizes = ", ".join(f"{sum(c.values())} ({sum(v for k, v in c.items() if k.startswith('LDG'))} loads, "
                      f"{sum(v for k, v in c.items() if re.match(r'[FD](FMA|MUL|ADD)$', k))} float ops)"
                      for c in loops(sass))
    return f"{kernel} {precision} {tile}: {registers} registers, {spilled} B spilled; loops (one per block): {sizes}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precisions", nargs="+", default=["float32", "float64"])
    parser.add_argument("--tiles", nargs="+", default=[], metavar="KERNEL=ATOMS,SLOTS,WARPS",
                        help="tiles instead of the kept ones, e.g. t=1,4,1 grad=1,2,1")
    parser.add_argument("--atom-tiles", action="store_true", help="the uncompressed atom-tile kernels instead")
    args = parser.parse_args()
    chosen = {k: tuple(int(v) for v in tile.split(",")) for k, tile in (t.split("=") for t in args.tiles)}
    for precision in args.precisions:
        dtype = getattr(torch, precision)
        kept = (atom_tiles.F16X3_TILES if dtype == torch.float32 else atom_tiles.TILES[dtype]) if args.atom_tiles \
            else compressed.TILES[dtype]
        for kernel in ("t", "grad"):
            print(report_line(kernel, precision, chosen.get(kernel, kept[kernel]), args.atom_tiles), flush=True)


if __name__ == "__main__":
    main()
