"""Run 261: whole prebuilt-list calls with `tail.patch`'s hidden-stack kernel (MODE "stack") at the tiles that
timed best alone in call 1 (`run261_stack1.jsonl`), against the tree; run 250's `variant_probe.py` runner.
Usage (GPU, repository root, tail.patch applied): python stack_tiles.py water=.mid/water/model.dp ... --rounds 3
It ran on cce05f8 with the patch (calls 2 and 3); the patch does not apply after 3bf5ff5, which landed the kernel as
`fitting_stack` (`stack_ab.py` is this probe's twin for `main`).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from variant_probe import main

from deeppot.kernels import fitting_tail

# name: (tile, programs a multiprocessor; 1000: one program a row block)
TILES = {"s64k64s2p4": (dict(BM=64, BN=64, BK=64, warps=4, stages=2), 4),
         "s64k32s4p2": (dict(BM=64, BN=64, BK=32, warps=4, stages=4), 2),
         "s64k64s3p4": (dict(BM=64, BN=64, BK=64, warps=4, stages=3), 4),
         "s128k32s3": (dict(BM=128, BN=128, BK=32, warps=8, stages=3), 1000)}
# call 3: around call 2's best (s64k32s4p2)
TILES3 = {"s64k32s4p2": TILES["s64k32s4p2"], "s64k32s4p3": (dict(BM=64, BN=64, BK=32, warps=4, stages=4), 3),
          "s64k32s4": (dict(BM=64, BN=64, BK=32, warps=4, stages=4), 1000),
          "s64k32s5p2": (dict(BM=64, BN=64, BK=32, warps=4, stages=5), 2),
          "s64n128k32s3p2": (dict(BM=64, BN=128, BK=32, warps=4, stages=3), 2),
          "s64k16s6p2": (dict(BM=64, BN=64, BK=16, warps=4, stages=6), 2)}
if "--second" in sys.argv:
    sys.argv.remove("--second")
    TILES = TILES3


def set_variant(name):
    fitting_tail.MODE = "tree" if name == "tree" else "stack"
    if name != "tree":
        tile, per_sm = TILES[name]
        fitting_tail.STACK_TILE.update(tile)
        fitting_tail.PROGRAMS_PER_SM = per_sm


if __name__ == "__main__":
    main(("tree", *TILES), set_variant, keep=("_persistent_kernel", "_stack_kernel", "_t_bar_kernel",
                                             "_grad_kernel", "gemv"))
