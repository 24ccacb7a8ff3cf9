#!/bin/bash
# Session 21, call 1 (H100): atom tiles for the inference kernels (sweep), coefficient-major tables for the
# compressed kernels, where the rest of a 98,304-atom evaluation goes (profile), kernel tests on the GPU.
set -u
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/benchmarks
T0=$(date +%s)
el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name --format=csv,noheader
el tests
timeout 150 python3 -m pytest -q -x tests/kernels/test_descriptor.py tests/compress/test_kernels.py 2>&1 | tail -3
el tiles
timeout 260 python3 benchmarks/atom_tiles_sweep.py --atoms 98304 | tee $OUT/run39_atom_tiles.jsonl
el compressed
timeout 100 python3 benchmarks/compress_tiles.py | tee $OUT/run39_compress_tiles.jsonl
el profile
timeout 60 python3 - <<'PY' 2>&1 | tee $OUT/run39_profile.txt
import torch
from compress_bench import model_pair, water_box
from deeppot.infer import Evaluator
torch.set_grad_enabled(False)
for i, name in enumerate(("uncompressed", "compressed")):
    model = model_pair("float32")[i]
    ev = Evaluator(model, "cuda")
    flat = ev.neighbors(*water_box(98304, "cuda"))
    for _ in range(3):
        ev.evaluate_neighbors(flat)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            ev.evaluate_neighbors(flat)
        torch.cuda.synchronize()
    print("###", name, "float32 98304, 3 calls")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=30, max_name_column_width=70))
PY
el end
