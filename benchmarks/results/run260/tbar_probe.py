"""Run 260: dE/dT straight from the fitting's first-layer gradient, dE/dD never stored (not in the tree; for the next
session's GPU call). The tree writes dE/dD = gz1 W1^T (rows x 1600 float32, 629 MB at 98,304 water atoms) from the
persistent f16x3 product and reads it back in `descriptor_matrix._t_bar_kernel` (0.37 ms); here one program owns a
row block, walks dE/dD's column tiles in order and folds each into dE/dT at once:

    dE/dT[c, m] = sum_k dD[m, k] T[c, k]  +  (m < m2) sum_a dD[a, m] T[c, a]

A column tile of BN columns holds BN / m2 whole rows m of dD, so the first term of those m is complete in the tile;
the second sums over every m, so it rides along the walk in registers ((BM, m2) a c) and is stored at the end with
the first term of the m < m2 rows.

Checks (CPU, Triton's interpreter): `python tbar_probe.py --check` against float64 PyTorch, with and without an
atom index. Compile report: `--compile` (sm_90, aligned tensors). GPU (repository root):
`python tbar_probe.py --model .mid/water/model.dp --rows 65536` times the tree's `product_t` + `t_bar_from_desc_grad`
against this kernel over tiles and prints the largest deviation of dE/dT from the tree's.
"""
import functools
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from stack_probe import _product, cuda_ms, run_probe, sm90_report

from deeppot.kernels import descriptor_matrix, fitting_gemm
from deeppot.kernels.precision import _split


@triton.jit
def _fold_c(dd, t_ptr, atom, real, m0, c: tl.constexpr, lt, M1: tl.constexpr, M2: tl.constexpr,
            MT: tl.constexpr, out_ptr):
    """Component c of one column tile of dD (dd (BM, MT, M2): rows m0..m0+MT of each atom's dD) folded into dE/dT:
    its rows' first term stored (rows m >= M2) or added to lt (m < M2), the second term added to lt (BM, M2)."""
    k = tl.arange(0, M2)
    m = m0 + tl.arange(0, MT)
    ok = real[:, None] & (m < M1)[None, :]
    row = t_ptr + (atom * 4 + c)[:, None] * M1
    t_k = tl.load(row + k[None, :], mask=real[:, None], other=0.0)  # T[c, k], k < M2
    t_m = tl.load(row + m[None, :], mask=ok, other=0.0)  # T[c, m] of the tile's rows
    first = tl.sum(dd * t_k[:, None, :], axis=2)  # (BM, MT)
    lt += tl.sum(dd * t_m[:, :, None], axis=1)
    if m0 < M2:  # rows m < M2: their first term joins the second's sums (stored once, at the end)
        lt += tl.sum(first[:, :, None] * (m[:, None] == k[None, :]).to(first.dtype)[None, :, :], axis=1)
    tl.store(out_ptr + (atom * 4 + c)[:, None] * M1 + m[None, :], first, mask=ok & (m >= M2)[None, :])
    return lt


@triton.jit
def _store_lt(out_ptr, atom, real, c: tl.constexpr, lt, M1: tl.constexpr, M2: tl.constexpr):
    k = tl.arange(0, M2)
    tl.store(out_ptr + (atom * 4 + c)[:, None] * M1 + k[None, :], lt, mask=real[:, None])


@triton.jit
def _dd_t_bar_kernel(gz_ptr, wh_ptr, wl_ptr, t_ptr, idx_ptr, out_ptr, rows, n_in, M1: tl.constexpr,
                     M2: tl.constexpr, DP: tl.constexpr, NP: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr, STAGES: tl.constexpr, HAS_INDEX: tl.constexpr):
    """dE/dT (natoms, 4, M1) of the rows r0.. of gz (rows, n_in): dD = gz W1^T in f16x3 on W1^T's parts (DP x NP,
    padding zero), tile by tile (module docstring); atom i's T and dE/dT rows are idx[i]'s (HAS_INDEX) or i's."""
    r0 = tl.program_id(0) * BM
    rows_i = r0 + tl.arange(0, BM)
    real = rows_i < rows
    atom = tl.load(idx_ptr + rows_i, mask=real, other=0).to(tl.int64) if HAS_INDEX else rows_i.to(tl.int64)
    MT: tl.constexpr = BN // M2
    zero = tl.zeros((BM, M2), dtype=tl.float32)
    lt0, lt1, lt2, lt3 = zero, zero, zero, zero
    for c0 in range(0, NP, BN):
        acc = _product(gz_ptr, n_in, r0, rows, n_in, wh_ptr, wl_ptr, c0, DP, BM, BN, BK, STAGES, NP)
        dd = tl.reshape(acc, (BM, MT, M2))  # dD[m, k] is column m M2 + k
        m0 = c0 // M2
        lt0 = _fold_c(dd, t_ptr, atom, real, m0, 0, lt0, M1, M2, MT, out_ptr)
        lt1 = _fold_c(dd, t_ptr, atom, real, m0, 1, lt1, M1, M2, MT, out_ptr)
        lt2 = _fold_c(dd, t_ptr, atom, real, m0, 2, lt2, M1, M2, MT, out_ptr)
        lt3 = _fold_c(dd, t_ptr, atom, real, m0, 3, lt3, M1, M2, MT, out_ptr)
    _store_lt(out_ptr, atom, real, 0, lt0, M1, M2)
    _store_lt(out_ptr, atom, real, 1, lt1, M1, M2)
    _store_lt(out_ptr, atom, real, 2, lt2, M1, M2)
    _store_lt(out_ptr, atom, real, 3, lt3, M1, M2)


def w_t_parts(w1: torch.Tensor, dp: int, bn: int) -> tuple[torch.Tensor, torch.Tensor]:
    """W1^T's float16 parts (DP x NP, padding zero) for w1 (n_in... as (1, n_desc, n_in): `fitting._unpack`'s)."""
    wt = w1[0].detach().float().T.contiguous()  # (n_in, n_desc)
    n_in, n_desc = wt.shape
    padded = []
    for part in _split(wt):
        out = part.new_zeros(dp, triton.cdiv(n_desc, bn) * bn)
        out[:n_in, :n_desc] = part
        padded.append(out)
    return padded[0], padded[1]


def dd_t_bar(gz: torch.Tensor, parts: tuple, t_mat: torch.Tensor, m2: int, tile: dict,
             index: torch.Tensor | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    """dE/dT (natoms, 4, M1) rows of the atoms `index` (all when None) from gz (rows, n_in) and W1^T's parts."""
    rows, n_in = gz.shape
    out = torch.empty_like(t_mat) if out is None else out
    dp, np_ = parts[0].shape
    idx = index if index is not None else gz
    _dd_t_bar_kernel[(triton.cdiv(rows, tile["BM"]),)](gz, *parts, t_mat, idx, out, rows, n_in, M1=t_mat.shape[-1],
                                                       M2=m2, DP=dp, NP=np_, BM=tile["BM"], BN=tile["BN"],
                                                       BK=tile["BK"], STAGES=tile["stages"],
                                                       HAS_INDEX=index is not None, num_warps=tile["warps"])
    return out


def reference(gz, w1, t_mat, m2, index=None):
    """The same in float64 PyTorch: dD = gz W1^T, then `analytic.t_bar_from_desc_grad`'s two terms."""
    t = t_mat.double() if index is None else t_mat.double()[index]
    dd = (gz.double() @ w1[0].double().T).reshape(len(gz), t.shape[-1], m2)
    t_bar = torch.einsum("nmk,nck->ncm", dd, t[:, :, :m2])
    t_bar[:, :, :m2] += torch.einsum("nmk,ncm->nck", dd, t)
    return t_bar


def check(tiles: list) -> None:
    """Under the interpreter: M1 = 40, m2 = 8, n_in = 24, a ragged last block; with and without an index."""
    g = torch.Generator().manual_seed(0)
    natoms, m1, m2, n_in = 70, 40, 8, 24
    t_mat = torch.randn(natoms, 4, m1, generator=g)
    w1 = torch.randn(1, m1 * m2, n_in, generator=g) * 0.2
    for index in (None, torch.randperm(natoms, generator=g)[:50]):
        rows = natoms if index is None else len(index)
        gz = torch.randn(rows, n_in, generator=g)
        ref = reference(gz, w1, t_mat, m2, index)
        for tile in tiles:
            parts = w_t_parts(w1, triton.next_power_of_2(n_in), tile["BN"])
            got = dd_t_bar(gz, parts, t_mat, m2, tile, index)
            got = got if index is None else got[index]
            dev = float((got.double() - ref).abs().max() / ref.abs().max())
            print(json.dumps({"check": tile, "index": index is not None, "deviation": dev}), flush=True)
            assert dev < 1e-5, dev


def gpu(model: str, rows: int, k: int, tiles: list) -> None:
    """The tree's dE/dD product and dE/dT kernel against this kernel, net k of the model, random gz and T in an
    atom order with `rows` of 1.5 x rows atoms of type k (as water's H among all atoms). Without CUDA: a dry run of
    the first tile, untimed."""
    from deeppot.io.model_file import load_model
    from deeppot.kernels import fitting
    device = "cuda" if torch.cuda.is_available() else "cpu"
    loaded = load_model(model)
    nets, m2 = loaded.fitting.nets.to(device), loaded.descriptor.axis_neuron
    hidden, _, _ = fitting._unpack(*fitting._flat_params(nets, k))
    w1 = hidden[0][0]
    m1 = w1.shape[1] // m2
    natoms = rows * 3 // 2
    t_mat = torch.randn(natoms, 4, m1, device=device) * 0.1
    index = torch.randperm(natoms, device=device)[:rows].sort().values
    gz = torch.randn(rows, w1.shape[2], device=device) * 0.01

    def tree():
        dd = fitting_gemm.product_t(gz[None], w1, "f16x3")[0]
        return descriptor_matrix.t_bar_from_desc_grad(dd, t_mat, index, torch.zeros_like(t_mat))

    ref = tree()[index]
    cuda = device == "cuda"
    base = {"model": model, "k": k, "rows": rows, "m1": m1, "m2": m2}
    print(json.dumps({**base, "variant": "tree", "ms": round(cuda_ms(tree), 4) if cuda else None}), flush=True)
    for tile in tiles if cuda else tiles[:1]:
        parts = w_t_parts(w1, triton.next_power_of_2(w1.shape[2]), tile["BN"])
        run = functools.partial(dd_t_bar, gz, parts, t_mat, m2, tile, index, torch.zeros_like(t_mat))
        try:
            dev = float((run()[index] - ref).abs().max() / ref.abs().max())
            ms = round(cuda_ms(run), 4) if cuda else None
        except Exception as e:  # a tile out of resources: say so, go on
            print(json.dumps({**base, "tile": tile, "error": str(e)[:200]}), flush=True)
            continue
        print(json.dumps({**base, "variant": "fused", "tile": tile, "ms": ms, "deviation": dev}), flush=True)


def compile_report(tiles: list, m1: int = 100, m2: int = 16, dp: int = 256) -> None:
    """Each tile compiled for sm_90 on this machine (water's widths; `stack_probe.sm90_report`)."""
    types = {"wh_ptr": "*fp16", "wl_ptr": "*fp16", "idx_ptr": "*i64", "rows": "i32", "n_in": "i32"}
    for tile in tiles:
        meta = dict(M1=m1, M2=m2, DP=dp, NP=triton.cdiv(m1 * m2, tile["BN"]) * tile["BN"], BM=tile["BM"],
                    BN=tile["BN"], BK=tile["BK"], STAGES=tile["stages"], HAS_INDEX=True)
        sm90_report(_dd_t_bar_kernel, types, meta, tile)


# compiled for sm_90 on the CPU (`--compile`, water's widths): (64, 64, 64) 4 warps 2 / 3 stages 48 / 80 KB shared and
# (128, 64, 64) 8 warps 2 stages 64 KB, none spilled; (64, 128, 64) 4 warps 80 KB, 144 B; (128, 128, 64) 96 KB, 188 B
TILES = [dict(BM=64, BN=64, BK=64, warps=4, stages=2), dict(BM=64, BN=64, BK=64, warps=4, stages=3),
         dict(BM=128, BN=64, BK=64, warps=8, stages=2), dict(BM=64, BN=128, BK=64, warps=4, stages=2),
         dict(BM=128, BN=128, BK=64, warps=8, stages=2)]


def main() -> None:
    checks = [dict(BM=16, BN=16, BK=16, warps=4, stages=1), dict(BM=32, BN=32, BK=32, warps=4, stages=1),
              dict(BM=16, BN=128, BK=16, warps=4, stages=1)]  # 16 rows m a tile, m2 = 8: rows either side of m2
    run_probe(functools.partial(check, checks), compile_report, gpu, TILES)


if __name__ == "__main__":
    main()
