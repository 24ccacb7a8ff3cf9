"""Run 260: a fitting net's hidden stack after its first layer in one kernel (not in the tree; for the next session's
GPU call). Inference's fitting nets (`fitting_gemm.value_and_input_grad`) run six f16x3 products a type, each a
launch through DRAM: the first layer (1600 -> 240), two 240-wide hidden layers, two 240-wide input gradients and dE/dD
(240 -> 1600), plus cuBLAS's output dot and an elementwise kernel for the top gradient. The four 240-wide products
take ~0.8 ms of water's 1.95 ms of products at ~18% of the float16 rate (run 259 call 2: 4 k steps a tile).

`_stack_kernel` takes a row block from h1 and a1 (the first layer's output and tanh) to the energy and gz1 = dE/dz1
(the first layer's gradient before its product with W1^T) alone: layers 2 and 3 forward (a = tanh(h W + b),
h' = h + idt a), the output dot, the top gradient, and the gradients through W3 and W2, each product f16x3 on W's
float16 parts as the tree's (`precision.weight_parts`), the intermediate rows in a per-program scratch read back at
once (L2, not DRAM: 5 tensors a row block, where the tree writes and reads 8 through DRAM and launches 6 kernels).
For the nets deeppot's models have (hidden widths d, d, d with the same-width skip): water, copper, the alloy.

Checks (CPU, Triton's interpreter): `python stack_probe.py --check` against a float64 evaluation of the same stack.
GPU (repository root): `python stack_probe.py --model .mid/water/model.dp --rows 65536` times the tree's fitting nets
(value_and_input_grad, f16x3) against the first layer and dE/dD through the tree's products with this kernel between
them, over tiles, and prints the largest deviations of energy and dE/dD from the tree's.
"""
import argparse
import functools
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run259"))
from gemm_probe import ms as cuda_ms  # median ms of CUDA-event timings

from deeppot.kernels import fitting, fitting_gemm
from deeppot.kernels.activation import _tanh
from deeppot.kernels.embedding import _f16_parts
from deeppot.kernels.fitting_gemm import _parts_step
from deeppot.kernels.precision import _split

H2, A2, GZ3, G2, GZ2 = (tl.constexpr(i) for i in range(5))  # the scratch's tensors, each (BM, DP) a program


@triton.jit
def _product(x_ptr, x_row, r0, rows, k_end, wh_ptr, wl_ptr, c0, DP: tl.constexpr, BM: tl.constexpr,
             BN: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr, W_ROW: tl.constexpr = 0):
    """Rows r0.. of x (x_row apart, columns < k_end) times columns c0.. of W's parts (DP rows, W_ROW apart (DP when
    0), padding zero) in f16x3, as `fitting_gemm._parts_tile`."""
    rm = r0 + tl.arange(0, BM)[:, None]
    kk = tl.arange(0, BK)
    cn = c0 + tl.arange(0, BN)[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    lo = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in tl.range(0, DP, BK, num_stages=STAGES):
        x = tl.load(x_ptr + rm * x_row + (k0 + kk)[None, :], mask=(rm < rows) & ((k0 + kk)[None, :] < k_end),
                    other=0.0, cache_modifier=".cg")
        x_hi, x_lo = _f16_parts(x)
        at = (k0 + kk)[:, None] * (W_ROW if W_ROW else DP) + cn
        acc, lo = _parts_step(x_hi, x_lo, tl.load(wh_ptr + at), tl.load(wl_ptr + at), acc, lo)
    return acc + lo * (1.0 / 2048.0)


@triton.jit
def _tile(ptr, row_stride, r0, c0, rows, width, BM: tl.constexpr, BN: tl.constexpr):
    """Pointers and mask of the (BM, BN) block at (r0, c0) of a (rows, width) tensor, rows row_stride apart."""
    rm = r0 + tl.arange(0, BM)[:, None]
    cn = c0 + tl.arange(0, BN)[None, :]
    return ptr + rm * row_stride + cn, (rm < rows) & (cn < width)


@triton.jit
def _vec(ptr, c0, BN: tl.constexpr):
    """Columns c0.. of a (DP,) vector (padding zero), as a (1, BN) row."""
    return tl.load(ptr + c0 + tl.arange(0, BN))[None, :]


@triton.jit
def _forward(s_ptr, h1_ptr, r0, rows, D, w_ptr, b_ptr, idt_ptr, wout_ptr, DP: tl.constexpr, BM: tl.constexpr,
             BN: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    """Layers 2 and 3 of a row block, the scratch's H2, A2 and GZ3 written; returns the block's h3 . w_out."""
    slab = BM * DP
    for c0 in range(0, DP, BN):  # layer 2 from h1 (global, D wide)
        u = _product(h1_ptr, D, r0, rows, D, w_ptr, w_ptr + DP * DP, c0, DP, BM, BN, BK, STAGES)
        a = _tanh(u + _vec(b_ptr, c0, BN))
        h_at, h_ok = _tile(h1_ptr, D, r0, c0, rows, D, BM, BN)
        out = tl.load(h_at, mask=h_ok, other=0.0) + _vec(idt_ptr + DP, c0, BN) * a
        s_at, _ = _tile(s_ptr, DP, 0, c0, BM, DP, BM, BN)
        tl.store(s_at + A2 * slab, a)
        tl.store(s_at + H2 * slab, out)
    tl.debug_barrier()  # the block's h2 whole before layer 3 reads it
    value = tl.zeros((BM,), dtype=tl.float32)
    for c0 in range(0, DP, BN):  # layer 3 from h2 (scratch), the output dot and the top gradient
        u = _product(s_ptr + H2 * slab, DP, 0, BM, DP, w_ptr + 2 * DP * DP, w_ptr + 3 * DP * DP, c0, DP, BM, BN,
                     BK, STAGES)
        a = _tanh(u + _vec(b_ptr + DP, c0, BN))
        s_at, _ = _tile(s_ptr, DP, 0, c0, BM, DP, BM, BN)
        idt, w_out = _vec(idt_ptr + 2 * DP, c0, BN), _vec(wout_ptr, c0, BN)
        value += tl.sum((tl.load(s_at + H2 * slab, cache_modifier=".cg") + idt * a) * w_out, axis=1)
        tl.store(s_at + GZ3 * slab, w_out * idt * (1.0 - a * a))
    tl.debug_barrier()
    return value


@triton.jit
def _backward(s_ptr, a1_ptr, gz1_ptr, r0, rows, D, w_ptr, idt_ptr, wout_ptr, DP: tl.constexpr, BM: tl.constexpr,
              BN: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    """g2 = gz3 W3^T + g3 (g3 = w_out) and gz2, then g1 = gz2 W2^T + g2 and gz1 = g1 idt1 (1 - a1^2) to gz1_ptr."""
    slab = BM * DP
    for c0 in range(0, DP, BN):
        u = _product(s_ptr + GZ3 * slab, DP, 0, BM, DP, w_ptr + 6 * DP * DP, w_ptr + 7 * DP * DP, c0, DP, BM, BN,
                     BK, STAGES)
        g = u + _vec(wout_ptr, c0, BN)
        s_at, _ = _tile(s_ptr, DP, 0, c0, BM, DP, BM, BN)
        a = tl.load(s_at + A2 * slab, cache_modifier=".cg")
        tl.store(s_at + G2 * slab, g)
        tl.store(s_at + GZ2 * slab, g * _vec(idt_ptr + DP, c0, BN) * (1.0 - a * a))
    tl.debug_barrier()
    for c0 in range(0, DP, BN):
        u = _product(s_ptr + GZ2 * slab, DP, 0, BM, DP, w_ptr + 4 * DP * DP, w_ptr + 5 * DP * DP, c0, DP, BM, BN,
                     BK, STAGES)
        s_at, _ = _tile(s_ptr, DP, 0, c0, BM, DP, BM, BN)
        g = u + tl.load(s_at + G2 * slab, cache_modifier=".cg")
        a_at, ok = _tile(a1_ptr, D, r0, c0, rows, D, BM, BN)
        a = tl.load(a_at, mask=ok, other=0.0)
        out_at, _ = _tile(gz1_ptr, D, r0, c0, rows, D, BM, BN)
        tl.store(out_at, g * _vec(idt_ptr, c0, BN) * (1.0 - a * a), mask=ok)
    tl.debug_barrier()  # the scratch is the next block's


@triton.jit
def _stack_kernel(h1_ptr, a1_ptr, w_ptr, b_ptr, idt_ptr, wout_ptr, b_out, scratch_ptr, value_ptr, gz1_ptr, rows, D,
                  programs, DP: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  STAGES: tl.constexpr, PERSISTENT: tl.constexpr):
    """Row blocks of BM rows: PERSISTENT (GPU only: the interpreter takes no loop from a program id), `programs`
    programs walk them; else one a program. w_ptr: 8 (DP, DP)
    float16 parts, hi then lo, of W2, W3, W2^T, W3^T; b (2, DP) b2, b3; idt (3, DP) idt1..3 (ones where a layer
    has none); w_out (DP,); padding zero."""
    pid = tl.program_id(0)
    s_ptr = scratch_ptr + pid.to(tl.int64) * (5 * BM * DP)
    if PERSISTENT:
        for block in tl.range(pid, tl.cdiv(rows, BM), programs):
            _block(block * BM, s_ptr, h1_ptr, a1_ptr, w_ptr, b_ptr, idt_ptr, wout_ptr, b_out, value_ptr, gz1_ptr,
                   rows, D, DP, BM, BN, BK, STAGES)
    else:
        _block(pid * BM, s_ptr, h1_ptr, a1_ptr, w_ptr, b_ptr, idt_ptr, wout_ptr, b_out, value_ptr, gz1_ptr, rows, D,
               DP, BM, BN, BK, STAGES)


@triton.jit
def _block(r0, s_ptr, h1_ptr, a1_ptr, w_ptr, b_ptr, idt_ptr, wout_ptr, b_out, value_ptr, gz1_ptr, rows, D,
           DP: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    value = _forward(s_ptr, h1_ptr, r0, rows, D, w_ptr, b_ptr, idt_ptr, wout_ptr, DP, BM, BN, BK, STAGES)
    rm = r0 + tl.arange(0, BM)
    tl.store(value_ptr + rm, value + b_out, mask=rm < rows)
    _backward(s_ptr, a1_ptr, gz1_ptr, r0, rows, D, w_ptr, idt_ptr, wout_ptr, DP, BM, BN, BK, STAGES)


def _padded(t: torch.Tensor, shape: tuple, dtype=None) -> torch.Tensor:
    out = t.new_zeros(shape, dtype=dtype or t.dtype)
    out[tuple(slice(0, n) for n in t.shape)] = t
    return out


def stack_operands(hidden: list, w_out: torch.Tensor, dp: int) -> tuple:
    """The kernel's weight operands from net k's `fitting._unpack` parameters (each (1, ...)): layers 2 and 3's."""
    (_, _, idt1), (w2, b2, idt2), (w3, b3, idt3) = hidden
    d = w2.shape[-1]
    mats = [w2[0], w3[0], w2[0].T, w3[0].T]
    parts = torch.stack([_padded(p, (dp, dp)) for w in mats for p in _split(w.float().contiguous())])
    b = torch.stack([_padded(b2.reshape(d), (dp,)), _padded(b3.reshape(d), (dp,))]).float()
    ones = w2.new_ones(d)
    idt = torch.stack([_padded((i.reshape(d) if i is not None else ones), (dp,)) for i in (idt1, idt2, idt3)])
    return parts.contiguous(), b.contiguous(), idt.float().contiguous(), _padded(w_out.reshape(d), (dp,)).float()


def stack(h1: torch.Tensor, a1: torch.Tensor, ops: tuple, b_out: float, tile: dict,
          programs: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(energy (rows,), gz1 (rows, d)) of the stack above layer 1 (module docstring); ops: `stack_operands`."""
    rows, d = h1.shape
    dp = ops[0].shape[-1]
    blocks = triton.cdiv(rows, tile["BM"])
    grid = min(programs, blocks) if programs else blocks
    scratch = h1.new_empty(grid * 5 * tile["BM"] * dp)
    value, gz1 = h1.new_empty(rows), torch.empty_like(h1)
    _stack_kernel[(grid,)](h1, a1, *ops, b_out, scratch, value, gz1, rows, d, grid, DP=dp, BM=tile["BM"],
                           BN=tile["BN"], BK=tile["BK"], STAGES=tile["stages"], PERSISTENT=programs is not None,
                           num_warps=tile["warps"])
    return value, gz1


def reference(h1, a1, hidden, w_out, b_out):
    """The same stack in float64 PyTorch (`fitting`'s formulas, module docstring there)."""
    (_, _, idt1), (w2, b2, idt2), (w3, b3, idt3) = [[None if p is None else p[0].double() for p in layer]
                                                    for layer in hidden]
    one = torch.ones_like(b2)
    idt1, idt2, idt3 = (one if i is None else i for i in (idt1, idt2, idt3))
    h1, a1, w_out = h1.double(), a1.double(), w_out.reshape(-1).double()
    a2 = torch.tanh(h1 @ w2 + b2)
    h2 = h1 + idt2 * a2
    a3 = torch.tanh(h2 @ w3 + b3)
    value = (h2 + idt3 * a3) @ w_out + float(b_out)
    gz3 = w_out * idt3 * (1 - a3 * a3)
    g2 = gz3 @ w3.T + w_out
    gz2 = g2 * idt2 * (1 - a2 * a2)
    g1 = gz2 @ w2.T + g2
    return value, g1 * idt1 * (1 - a1 * a1)


def random_net(d: int, n0: int, seed: int = 0) -> tuple[list, torch.Tensor, float]:
    """Hidden layers (n0 -> d, d -> d, d -> d) with timesteps and an output, `fitting._unpack`'s layout."""
    g = torch.Generator().manual_seed(seed)

    def r(*shape, scale=1.0):
        return torch.randn(*shape, generator=g) * scale

    hidden = [(r(1, n0, d, scale=n0 ** -0.5), r(1, d), 0.1 + 0.01 * r(1, d)),
              (r(1, d, d, scale=d ** -0.5), r(1, d), 0.1 + 0.01 * r(1, d)),
              (r(1, d, d, scale=d ** -0.5), r(1, d), 0.1 + 0.01 * r(1, d))]
    return hidden, r(1, d, 1, scale=d ** -0.5), 0.3


def first_layer(x, hidden):
    """h1 and a1 of layer 1 in PyTorch (float32)."""
    w1, b1, idt1 = (p[0] for p in hidden[0])
    a1 = torch.tanh(x @ w1 + b1)
    return idt1 * a1, a1


def check(rows: int, d: int, tiles: list) -> None:
    """The kernel under the interpreter against `reference`, on random weights of width d (a ragged last block)."""
    hidden, w_out, b_out = random_net(d, 48)
    h1, a1 = first_layer(torch.randn(rows, 48, generator=torch.Generator().manual_seed(1)), hidden)
    ref_v, ref_g = reference(h1, a1, hidden, w_out, b_out)
    ops = stack_operands(hidden, w_out, triton.next_power_of_2(d))
    for tile in tiles:
        value, gz1 = stack(h1, a1, ops, b_out, tile)
        dv = float((value.double() - ref_v).abs().max() / ref_v.abs().max())
        dg = float((gz1.double() - ref_g).abs().max() / ref_g.abs().max())
        print(json.dumps({"check": tile, "rows": rows, "d": d, "d_value": dv, "d_gz1": dg}), flush=True)
        assert dv < 1e-5 and dg < 1e-5, (dv, dg)


def gpu(model: str, rows: int, k: int, tiles: list) -> None:
    """The tree's fitting nets against layer 1 + this kernel + dE/dD, one type's net, random D in the data's range.
    Without CUDA (a dry run of this code under the interpreter): the first tile, one program a block, untimed."""
    from deeppot.io.model_file import load_model
    device = "cuda" if torch.cuda.is_available() else "cpu"
    nets = load_model(model).fitting.nets.to(device)
    hidden, w_out, b_out = fitting._unpack(*fitting._flat_params(nets, k))
    x = torch.rand(rows, hidden[0][0].shape[1], device=device) * 0.5
    ops = stack_operands(hidden, w_out, triton.next_power_of_2(w_out.shape[1]))
    bias = float(b_out.reshape(-1)[0])

    def tree():
        return fitting_gemm.value_and_input_grad(nets, x, k, "f16x3")

    def fused(tile, programs):
        (w1, b1, idt1), _, _ = hidden
        a1, h1 = fitting_gemm.layer_forward(x[None], w1, b1, idt1, 0, "f16x3")
        value, gz1 = stack(h1[0], a1[0], ops, bias, tile, programs)
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


# compiled for sm_90 on the CPU (`--compile`, aligned tensors): (64, 64, 64) 4 warps 2 stages 48 KB shared, no spill;
# 3 stages 80 KB, 8 B; (128, 64, 64) 8 warps 2 stages 64 KB, none; (64, 64, 32) 4 stages 56 KB, 4 B; (128, 128, 32)
# 8 warps 3 stages 80 KB, 404 B stored / 548 loaded; (128, 128, 64) 2 stages 96 KB, 432 / 820
TILES = [dict(BM=64, BN=64, BK=64, warps=4, stages=2), dict(BM=64, BN=64, BK=64, warps=4, stages=3),
         dict(BM=128, BN=64, BK=64, warps=8, stages=2), dict(BM=64, BN=64, BK=32, warps=4, stages=4),
         dict(BM=128, BN=128, BK=32, warps=8, stages=3), dict(BM=128, BN=128, BK=64, warps=8, stages=2)]


def compile_report(tiles: list, dp: int = 256) -> None:
    """Each tile compiled for sm_90 on this machine: shared memory (Triton's metadata, as a GPU launch checks it),
    registers and spills (the bundled ptxas), for the persistent launch on 16-byte aligned tensors."""
    types = {name: ("*fp16" if name == "w_ptr" else "*fp32") for name in _stack_kernel.arg_names
             if name.endswith("_ptr")}
    types.update(b_out="fp32", rows="i32", D="i32", programs="i32")
    for tile in tiles:
        meta = dict(DP=dp, BM=tile["BM"], BN=tile["BN"], BK=tile["BK"], STAGES=tile["stages"], PERSISTENT=True)
        sm90_report(_stack_kernel, types, meta, tile)


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


def run_probe(check_fn, compile_fn, gpu_fn, tiles: list) -> None:
    """A probe's command line (module docstrings): --check (the interpreter), --compile (sm_90), else the GPU."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--model")
    ap.add_argument("--rows", type=int, default=65536)
    ap.add_argument("--type", type=int, default=1)
    args = ap.parse_args()
    if args.check:
        check_fn()
    elif args.compile:
        compile_fn(tiles)
    else:
        with torch.no_grad():
            gpu_fn(args.model, args.rows, args.type, tiles)


def main() -> None:
    checks = [dict(BM=32, BN=16, BK=16, warps=4, stages=1), dict(BM=16, BN=32, BK=32, warps=4, stages=1)]
    run_probe(functools.partial(check, 80, 24, checks), compile_report, gpu, TILES)


if __name__ == "__main__":
    main()
