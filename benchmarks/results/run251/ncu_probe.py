"""Run 251: one prebuilt-list evaluation of a trained model under Nsight Compute, to see where the float32 (f16x3)
atom-tile kernels stall (issue 9). Run 150's probe (`run150/ncu_kernels.py`) on a model file instead of fresh
weights. Usage: ncu --profile-from-start off ... python ncu_probe.py MODEL SYSTEM NATOMS
Only the last call is profiled (torch.cuda.profiler.start/stop around it)."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, replicas_for, replicate

from deeppot.infer import DeepPot

path, system, natoms = sys.argv[1], sys.argv[2], int(sys.argv[3])
coord, box, atype = load_frame(Path(".peer/data"), system)
c, b, t = replicate(coord, box, atype, replicas_for(natoms, len(atype)))
dp = DeepPot(path)
ev = dp.evaluator
flat = ev.neighbors(torch.as_tensor(c, device="cuda").reshape(1, -1, 3),
                    torch.as_tensor(t, device="cuda").reshape(1, -1),
                    torch.as_tensor(b, device="cuda").reshape(1, 3, 3))
for _ in range(3):
    ev.evaluate_neighbors(flat)
torch.cuda.synchronize()
print(f"== {system} {len(t)} atoms, products {ev.products}", flush=True)
torch.cuda.profiler.start()
ev.evaluate_neighbors(flat)
torch.cuda.synchronize()
torch.cuda.profiler.stop()
