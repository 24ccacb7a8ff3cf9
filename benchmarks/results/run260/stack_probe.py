"""Run 260: a fitting net's hidden stack after its first layer in one kernel (`fitting_tail._stack_kernel`), alone
over tiles, for the next session's GPU call. Inference's fitting nets (`fitting_gemm.value_and_input_grad`) run six
f16x3 products a type, each a launch through DRAM: the first layer (1600 -> 240), two 240-wide hidden layers, two
240-wide input gradients and dE/dD (240 -> 1600), plus cuBLAS's output dot and an elementwise kernel for the top
gradient. The four 240-wide products take ~0.8 ms of water's 1.95 ms of products at ~18% of the float16 rate (run
259 call 2: 4 k steps a tile). The kernel takes a row block from h1 and a1 (the first layer's output and tanh) to the
energy and gz1 alone, the rows between layers in a per-program scratch read back at once (L2).

Needs `tail.patch` (beside this file) applied: the kernels are its `deeppot/kernels/fitting_tail.py`, checked by its
tests (`tests/kernels/test_fitting_tail.py`). Compile report (CPU): `python stack_probe.py --compile`. GPU
(repository root): `python stack_probe.py --model .mid/water/model.dp --rows 65536` times the tree's fitting nets
(value_and_input_grad, f16x3) against the first layer and dE/dD through the tree's products with this kernel between
them, over tiles, and prints the largest deviations of energy and dE/dD from the tree's; without CUDA, a dry run of
the first tile under the interpreter, untimed.
"""
import argparse
import functools
import json
import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run259"))
from gemm_probe import ms as cuda_ms  # median ms of CUDA-event timings

from deeppot.kernels import fitting, fitting_gemm, fitting_tail


def gpu(model: str, rows: int, k: int, tiles: list) -> None:
    """The tree's fitting nets against layer 1 + the stack + dE/dD, net k, random D in the data's range."""
    from deeppot.io.model_file import load_model
    device = "cuda" if torch.cuda.is_available() else "cpu"
    nets = load_model(model).fitting.nets.to(device)
    hidden, w_out, b_out = fitting._unpack(*fitting._flat_params(nets, k))
    x = torch.rand(rows, hidden[0][0].shape[1], device=device) * 0.5
    ops = fitting_tail._stack_operands(hidden, w_out, b_out)

    def tree():
        return fitting_gemm.value_and_input_grad(nets, x, k, "f16x3")

    def fused(tile, programs):
        (w1, b1, idt1), _, _ = hidden
        a1, h1 = fitting_gemm.layer_forward(x[None], w1, b1, idt1, 0, "f16x3")
        value, gz1 = fitting_tail.hidden_stack(h1[0], a1[0], ops, tile, programs)
        return value, fitting_gemm.product_t(gz1[None], w1, "f16x3")[0]

    v_ref, g_ref = tree()
    base = {"model": model, "k": k, "rows": rows}
    cuda = device == "cuda"
    print(json.dumps({**base, "variant": "tree", "ms": round(cuda_ms(tree), 4) if cuda else None}), flush=True)
    sms = torch.cuda.get_device_properties(0).multi_processor_count if cuda else 0
    for tile in tiles if cuda else tiles[:1]:
        for programs in (None, 2 * sms, 4 * sms) if cuda else (None,):
            try:
                value, g0 = fused(tile, programs)
                ms = cuda_ms(functools.partial(fused, tile, programs)) if cuda else float("nan")
            except Exception as e:  # a tile out of resources: say so, go on
                print(json.dumps({**base, "tile": tile, "programs": programs, "error": str(e)[:200]}), flush=True)
                continue
            dv = float((value - v_ref.reshape(-1)).abs().max() / v_ref.abs().max())
            dg = float((g0 - g_ref).abs().max() / g_ref.abs().max())
            print(json.dumps({**base, "variant": "stack", "tile": tile, "programs": programs, "ms": round(ms, 4),
                              "d_value": dv, "d_g0": dg}), flush=True)


# compiled for sm_90 on the CPU (`--compile`, aligned tensors, the patch's kernel): (64, 64, 64) 4 warps 2 / 3 stages
# 48 / 80 KB shared, (128, 64, 64) 8 warps 2 stages 64 KB and (64, 64, 32) 4 stages 56 KB, none spilled; (128, 128,
# 32) 8 warps 3 stages 80 KB, 312 B stored / 596 loaded; (128, 128, 64) 2 stages 96 KB, 404 / 824
TILES = [dict(BM=64, BN=64, BK=64, warps=4, stages=2), dict(BM=64, BN=64, BK=64, warps=4, stages=3),
         dict(BM=128, BN=64, BK=64, warps=8, stages=2), dict(BM=64, BN=64, BK=32, warps=4, stages=4),
         dict(BM=128, BN=128, BK=32, warps=8, stages=3), dict(BM=128, BN=128, BK=64, warps=8, stages=2)]


def compile_report(tiles: list, dp: int = 256) -> None:
    """Each tile compiled for sm_90 on this machine: shared memory (Triton's metadata, as a GPU launch checks it),
    registers and spills (the bundled ptxas), for the persistent launch on 16-byte aligned tensors."""
    types = {"w_ptr": "*fp16", "rows": "i32", "D": "i32", "programs": "i32"}
    for tile in tiles:
        meta = dict(DP=dp, BM=tile["BM"], BN=tile["BN"], BK=tile["BK"], STAGES=tile["stages"], PERSISTENT=True)
        sm90_report(fitting_tail._stack_kernel, types, meta, tile)


def sm90_report(kernel, types: dict, meta: dict, tile: dict) -> None:
    """Print the kernel's shared memory, registers and spills for sm_90 at these constants: every argument not in
    `types` a float32 pointer; pointers and the sizes 16-divisible, as the launcher sees real tensors and water's
    sizes (without it every load is scalar with its own address, and the spills mislead)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from kernel_registers import TARGET, compiled_report
    from triton.compiler import ASTSource
    sig = {name: "constexpr" if name in meta else types.get(name, "*fp32") for name in kernel.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(kernel.arg_names)
             if sig[name].startswith("*") or name in ("rows", "D", "n_in")}
    source = ASTSource(kernel, sig, constexprs=meta, attrs=attrs)
    shared = triton.compile(source, target=TARGET, options={"num_warps": tile["warps"]}).metadata.shared
    print(json.dumps({"tile": tile, "shared": shared, "ptxas": compiled_report(source, tile["warps"])}), flush=True)


def run_probe(compile_fn, gpu_fn, tiles: list) -> None:
    """A probe's command line (module docstrings): --compile (sm_90), else the GPU (a dry run without one)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--model")
    ap.add_argument("--rows", type=int, default=65536)
    ap.add_argument("--type", type=int, default=1)
    args = ap.parse_args()
    if args.compile:
        compile_fn(tiles)
    else:
        with torch.no_grad():
            gpu_fn(args.model, args.rows, args.type, tiles)


if __name__ == "__main__":
    run_probe(compile_report, gpu, TILES)
