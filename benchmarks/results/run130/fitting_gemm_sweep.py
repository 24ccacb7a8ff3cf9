"""Run 130: run 129's sweep (run129/fitting_gemm_sweep.py) with other tiles, around
run 129's fastest of each epilogue (which fitting_gemm.TILES now holds), at 32,768 and 65,536 rows."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run129"))
from fitting_gemm_sweep import sweep


def tile(bm, bn, bk, warps, stages):
    return dict(BM=bm, BN=bn, BK=bk, num_warps=warps, num_stages=stages)


ROWS = (32768, 65536)
TILES = {
    "layer": [tile(128, 64, 32, 4, 4), tile(128, 64, 64, 4, 3), tile(128, 64, 32, 4, 3), tile(128, 64, 32, 4, 5),
              tile(64, 64, 32, 4, 4), tile(128, 64, 32, 8, 4), tile(256, 64, 32, 8, 4), tile(128, 32, 32, 4, 4),
              tile(128, 64, 16, 4, 6)],
    "grad": [tile(128, 128, 64, 8, 3), tile(128, 128, 64, 8, 4), tile(128, 64, 64, 4, 3), tile(128, 128, 64, 4, 3),
             tile(256, 128, 64, 8, 3), tile(128, 128, 128, 8, 2), tile(64, 128, 64, 4, 3), tile(128, 256, 64, 8, 2)],
}


if __name__ == "__main__":
    sweep(ROWS, lambda name: TILES["layer" if name.startswith("layer") else "grad"])
