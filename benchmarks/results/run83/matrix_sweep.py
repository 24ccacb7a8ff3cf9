"""Run 84: the descriptor-matrix kernels (D = T^T T<, dE/dT from dE/dD) at 98,304 water atoms for several atoms a
program, against their PyTorch twins; one JSON line each."""
import json
import sys
import time

import torch

import deeppot.kernels.descriptor_matrix as matrix
from deeppot.model import analytic

N, M1, M2 = 98304, 100, 16


def ms(fn, reps=20):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return round((time.perf_counter() - t0) / reps * 1e3, 4)


def rows(dtype):
    t_mat = torch.randn(N, 4, M1, dtype=dtype, device="cuda")
    d_desc = torch.randn(N, M1 * M2, dtype=dtype, device="cuda")
    idx = torch.arange(0, N, 3, device="cuda")
    yield {"dtype": str(dtype), "natoms": N,
           "torch_desc_ms": ms(lambda: analytic.descriptor_from_t(t_mat, M2)),
           "torch_t_bar_ms": ms(lambda: analytic.t_bar_from_desc_grad(d_desc.reshape(N, M1, M2), t_mat))}
    for atoms in (1, 2, 4, 8):
        matrix.ATOMS = atoms  # one precision at a time
        yield {"dtype": str(dtype), "natoms": N, "atoms": atoms,
               "desc_ms": ms(lambda: matrix.descriptor_from_t(t_mat, M2, dtype)),
               "t_bar_ms": ms(lambda: matrix.t_bar_from_desc_grad(d_desc, t_mat)),
               "desc_index_third_ms": ms(lambda: matrix.descriptor_from_t(t_mat, M2, dtype, idx)),
               "t_bar_index_third_ms": ms(lambda: matrix.t_bar_from_desc_grad(d_desc[:len(idx)], t_mat, idx))}


with open(sys.argv[1], "a") as out:
    for dtype in (torch.float32, torch.float64):
        for row in rows(dtype):
            print(json.dumps(row), flush=True)
            out.write(json.dumps(row) + "\n")
