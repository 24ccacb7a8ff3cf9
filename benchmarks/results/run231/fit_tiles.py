"""Run 231: the fitting products with their epilogues in f16x3 (`fitting_gemm`) on wider tiles than run 146 tried:
a 256-column tile covers water's 240 columns at once (x's tile read and split once, not twice). Water's shapes at
65,536 rows (run 146's `cases`). One JSON line each: ms (do_bench), deviation from the kept tile's result."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from triton.testing import do_bench

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run146"))
import torch
from layer_tiles import cases

from deeppot.kernels import fitting_gemm as fg

CANDIDATES = {"128x128x64/8/3 (kept)": dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=3),
              "64x256x64/8/3": dict(BM=64, BN=256, BK=64, num_warps=8, num_stages=3),
              "64x256x32/8/4": dict(BM=64, BN=256, BK=32, num_warps=8, num_stages=4),
              "128x256x32/8/3": dict(BM=128, BN=256, BK=32, num_warps=8, num_stages=3),
              "128x128x64/8/4": dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=4),
              "256x128x64/8/3": dict(BM=256, BN=128, BK=64, num_warps=8, num_stages=3),
              "128x128x32/4/4": dict(BM=128, BN=128, BK=32, num_warps=4, num_stages=4)}


def main() -> None:
    kept = dict(fg.F16X3_TILES)
    for name, (epilogue, call) in cases(torch.device("cuda")).items():
        fg.F16X3_TILES.update(kept)
        ref = call("f16x3")
        for label, tile in CANDIDATES.items():
            fg.F16X3_TILES[epilogue] = tile
            try:
                out = call("f16x3")
                dev = max(float((o - r).abs().max() / r.abs().max()) for o, r in zip(out, ref, strict=True))
                ms = do_bench(lambda: call("f16x3"), warmup=25, rep=200)  # noqa: B023
                row = {"product": name, "tile": label, "ms": round(ms, 4), "dev_from_kept": dev}
            except Exception as err:  # a tile that does not compile or fit
                row = {"product": name, "tile": label, "error": str(err)[-200:]}
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
