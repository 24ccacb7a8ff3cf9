"""Run 236: infer_bench.py with the f16x3 gradient atom tile given on the command line (ATOMS,SLOTS,WARPS first,
then infer_bench's own arguments).
    PYTHONPATH=$TREE:$TREE/benchmarks python tile_bench.py 2,32,4 --systems water copper ..."""
import sys

import infer_bench

from deeppot.kernels import atom_tiles

atom_tiles.F16X3_TILES["grad"] = tuple(int(v) for v in sys.argv[1].split(","))
infer_bench.main(sys.argv[2:])
