"""Run 260: dE/dT straight from the fitting's first-layer gradient, dE/dD never stored (`fitting_tail._fold_kernel`),
alone over tiles, for the next session's GPU call. The tree writes dE/dD = gz1 W1^T (rows x 1600 float32, 629 MB at
98,304 water atoms) from the persistent f16x3 product and reads it back in `descriptor_matrix._t_bar_kernel` (0.37
ms); the kernel has a program own a row block, walk dE/dD's column tiles in order and fold each into dE/dT at once:

    dE/dT[c, m] = sum_k dD[m, k] T[c, k]  +  (m < m2) sum_a dD[a, m] T[c, a]

Needs `tail.patch` (beside this file) applied: the kernel is its `deeppot/kernels/fitting_tail.py`, checked by its
tests (`tests/kernels/test_fitting_tail.py`). Compile report (CPU): `--compile` (sm_90, aligned tensors). GPU
(repository root): `python tbar_probe.py --model .mid/water/model.dp --rows 65536` times the tree's `product_t` +
`t_bar_from_desc_grad` against this kernel over tiles and prints the largest deviation of dE/dT from the tree's;
without CUDA, a dry run of the first tile under the interpreter, untimed.
"""
import functools
import json
import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from stack_probe import cuda_ms, run_probe, sm90_report

from deeppot.kernels import descriptor_matrix, fitting, fitting_gemm, fitting_tail


def gpu(model: str, rows: int, k: int, tiles: list) -> None:
    """The tree's dE/dD product and dE/dT kernel against this kernel, net k of the model, random gz and T in an
    atom order with `rows` of 1.5 x rows atoms of type k (as water's H among all atoms). Without CUDA: a dry run of
    the first tile, untimed."""
    from deeppot.io.model_file import load_model
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
        parts = fitting_tail._fold_operands(w1, tile["BN"])
        run = functools.partial(fitting_tail.fold_t_bar, gz, parts, t_mat, m2, index, torch.zeros_like(t_mat), tile)
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
        sm90_report(fitting_tail._fold_kernel, types, meta, tile)


# compiled for sm_90 on the CPU (`--compile`, water's widths): (64, 64, 64) 4 warps 2 / 3 stages 48 / 80 KB shared and
# (128, 64, 64) 8 warps 2 stages 64 KB, none spilled; (64, 128, 64) 4 warps 80 KB, 148 B; (128, 128, 64) 96 KB, 192 B
TILES = [dict(BM=64, BN=64, BK=64, warps=4, stages=2), dict(BM=64, BN=64, BK=64, warps=4, stages=3),
         dict(BM=128, BN=64, BK=64, warps=8, stages=2), dict(BM=64, BN=128, BK=64, warps=4, stages=2),
         dict(BM=128, BN=128, BK=64, warps=8, stages=2)]


if __name__ == "__main__":
    run_probe(compile_report, gpu, TILES)
