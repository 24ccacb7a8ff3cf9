"""Run 169: the descriptor-matrix kernels (`deeppot.kernels.descriptor_matrix`) at 98,304 water atoms (M1 100,
m2 16), float32 and float64: the kept kernels at other (ATOMS, warps), and a t_bar kernel that adds the T< term
of the first m2 columns after a barrier (store, then load, add, store) instead of moving it to its columns through a
one-hot product (a third of the kernel's arithmetic). Outputs compared with the kept kernels'; device time by
triton.testing.do_bench (ms). Usage: python t_bar_variants.py"""
import json
from functools import partial

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

from deeppot.kernels import descriptor_matrix as dm


@triton.jit
def _t_bar_barrier_kernel(dd_ptr, t_ptr, out_ptr, n, M1: tl.constexpr, M2: tl.constexpr, MP: tl.constexpr,
                          KP: tl.constexpr, ATOMS: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ATOMS + tl.arange(0, ATOMS)
    real = rows < n
    m, k = tl.arange(0, MP), tl.arange(0, KP)
    ok = real[:, None, None] & ((m < M1)[:, None] & (k < M2)[None, :])[None, :, :]
    dd = tl.load(dd_ptr + rows[:, None, None] * (M1 * M2) + (m[:, None] * M2 + k[None, :])[None, :, :], mask=ok,
                 other=0.0).to(t_ptr.dtype.element_ty)
    for c in tl.static_range(4):
        through_t = tl.sum(dd * dm._t_row(t_ptr, rows, real, c, k, M2, M1)[:, None, :], axis=2)
        through_lt = tl.sum(dd * dm._t_row(t_ptr, rows, real, c, m, M1, M1)[:, :, None], axis=1)
        out = out_ptr + (rows * 4 + c)[:, None] * M1
        tl.store(out + m[None, :], through_t, mask=real[:, None] & (m < M1)[None, :])
        tl.debug_barrier()
        first = real[:, None] & (k < M2)[None, :]
        tl.store(out + k[None, :], tl.load(out + k[None, :], mask=first, other=0.0) + through_lt, mask=first)


def main():
    n, m1, m2 = 98304, 100, 16
    for dtype in (torch.float32, torch.float64):
        torch.manual_seed(0)
        t_mat = torch.randn(n, 4, m1, dtype=dtype, device="cuda")
        d_desc = torch.randn(n, m1 * m2, dtype=dtype, device="cuda")
        ref_d = dm.descriptor_from_t(t_mat, m2, dtype)
        ref_tb = dm.t_bar_from_desc_grad(d_desc, t_mat)
        base = {"precision": str(dtype).split(".")[1], "natoms": n}
        for atoms in (2, 4, 8):
            for warps in (2, 4, 8):
                meta = dict(M1=m1, M2=m2, MP=128, KP=16, ATOMS=atoms, HAS_INDEX=False, num_warps=warps)
                grid = (triton.cdiv(n, atoms),)
                desc = torch.empty_like(ref_d)
                tb = torch.empty_like(ref_tb)
                run_d = partial(dm._descriptor_kernel[grid], t_mat, t_mat, desc, n, **meta)
                run_tb = partial(dm._t_bar_kernel[grid], d_desc, t_mat, t_mat, tb, n, **meta)
                bmeta = {k: v for k, v in meta.items() if k != "HAS_INDEX"}
                tb2 = torch.empty_like(ref_tb)
                run_tb2 = partial(_t_bar_barrier_kernel[grid], d_desc, t_mat, tb2, n, **bmeta)
                row = dict(base, atoms=atoms, warps=warps)
                for name, run, out, ref in (("descriptor", run_d, desc, ref_d), ("t_bar", run_tb, tb, ref_tb),
                                            ("t_bar_barrier", run_tb2, tb2, ref_tb)):
                    try:
                        run()
                        torch.cuda.synchronize()
                        row[f"{name}_equal"] = bool(torch.equal(out, ref))
                        row[f"{name}_ms"] = round(do_bench(run, warmup=20, rep=200), 4)
                    except Exception as err:
                        row[f"{name}_error"] = f"{type(err).__name__}: {str(err)[-200:]}"
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
