"""Run 131: run 129's sweep (run129/fitting_gemm_sweep.py) in float64: the fused products as float64 Triton GEMMs
(mma.sync on the float64 tensor cores) against cuBLAS's DGEMMs + the elementwise kernels. Ran at 74ca6b5, whose
kernel had the float64 variant; the next commit took it out (slower than cuBLAS)."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run129"))
from fitting_gemm_sweep import sweep

TILES = [dict(BM=bm, BN=bn, BK=bk, num_warps=w, num_stages=st) for bm, bn, bk, w, st in
         [(64, 64, 32, 4, 3), (128, 64, 32, 4, 3), (64, 128, 32, 4, 3), (128, 128, 32, 8, 2), (64, 64, 16, 4, 4),
          (128, 64, 16, 4, 4), (128, 128, 16, 8, 3), (64, 128, 16, 4, 4)]]

if __name__ == "__main__":
    sweep((32768, 65536), lambda name: TILES, dtype=torch.float64)
